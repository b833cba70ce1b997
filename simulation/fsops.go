package simulation

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/folder"
)

// The simulated user edits a device's MemFS the way an editor does: the
// new content goes to a temporary file in weft's work directory (which the
// scanner ignores), is synced, and is renamed over the target; parents
// are created as needed. Every change is made durable (Sync, SyncDir), so
// a crash of the device afterwards never loses it.

// writeFile replaces (or creates) p with content.
func writeFile(fsys *folder.MemFS, p string, content []byte) error {
	tmp, err := stageFile(fsys, p, content)
	if err != nil {
		return err
	}
	if err := fsys.Rename(tmp, p); err != nil {
		_ = fsys.Remove(tmp)
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return fsys.SyncDir(parentOf(p))
}

// stageFile writes content durably to a new file in weft's work directory
// (which the scanner ignores), creating p's parents, and returns its path:
// the caller moves it into place at p.
func stageFile(fsys *folder.MemFS, p string, content []byte) (string, error) {
	if err := mkdirs(fsys, parentOf(p)); err != nil {
		return "", err
	}
	if err := mkdirs(fsys, folder.WorkDir); err != nil {
		return "", err
	}
	f, err := fsys.CreateTemp(folder.WorkDir, "sim-")
	if err != nil {
		return "", err
	}
	tmp := f.Path()
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return tmp, nil
}

// mkdirs creates dir and its parents.
func mkdirs(fsys *folder.MemFS, dir string) error {
	if dir == "" {
		return nil
	}
	cur := ""
	for _, c := range strings.Split(dir, "/") {
		cur = joinPath(cur, c)
		if err := fsys.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", cur, err)
		}
		if err := fsys.SyncDir(parentOf(cur)); err != nil {
			return err
		}
	}
	return nil
}

// readFile returns p's content; ok is false when p is not a regular file.
func readFile(fsys *folder.MemFS, p string) ([]byte, bool) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return b, err == nil
}

// readHead returns up to n bytes from the start of p.
func readHead(fsys *folder.MemFS, p string, n int) []byte {
	f, err := fsys.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, n)
	k, _ := io.ReadFull(f, b)
	return b[:k]
}

// Item is one entry of a device's tree: a directory, or a file and the
// BLAKE3 hash of its content.
type Item struct {
	Dir  bool
	Hash [32]byte
	Size int
}

// Tree reads every file and directory of fsys except weft's own work
// directory, by path.
func Tree(fsys *folder.MemFS) (map[string]Item, error) {
	out := map[string]Item{}
	var walk func(dir string) error
	walk = func(dir string) error {
		infos, err := fsys.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, fi := range infos {
			p := joinPath(dir, fi.Name)
			if p == folder.WorkDir {
				continue
			}
			switch fi.Kind {
			case folder.KindDir:
				out[p] = Item{Dir: true}
				if err := walk(p); err != nil {
					return err
				}
			case folder.KindFile:
				b, ok := readFile(fsys, p)
				if !ok {
					return fmt.Errorf("reading %s", p)
				}
				out[p] = Item{Hash: blake3.Sum256(b), Size: len(b)}
			default:
				out[p] = Item{}
			}
		}
		return nil
	}
	return out, walk("")
}

// Files lists the regular files of fsys (outside the work directory),
// sorted, for ops that pick an existing file. The applier's temporary
// files are not the user's: they exist only while an apply is under way,
// and a user op on one (renaming it over a pool name, deleting it) would
// test the simulated user, not weft.
func Files(fsys *folder.MemFS) []string {
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		infos, err := fsys.ReadDir(dir)
		if err != nil {
			return
		}
		for _, fi := range infos {
			p := joinPath(dir, fi.Name)
			switch {
			case p == folder.WorkDir:
			case fi.Kind == folder.KindDir:
				walk(p)
			case fi.Kind == folder.KindFile && !strings.HasPrefix(fi.Name, folder.TempPrefix):
				out = append(out, p)
			}
		}
	}
	walk("")
	return out
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
