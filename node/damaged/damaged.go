package damaged

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

// Dir is where damaged copies are kept, inside folder.WorkDir (never
// synced).
const Dir = folder.WorkDir + "/corrupt"

// ErrChangedAgain: a damaged file changed again before it was moved
// aside; the next scan looks at it afresh.
var ErrChangedAgain = errors.New("changed again")

// MoveAside renames a damaged file into Dir, under its path with the time
// appended, and returns where it went (relative to the folder). The file
// must still be what the check read (c.New's size, mtime, inode and
// ctime), else ErrChangedAgain.
func MoveAside(fsys folder.FS, c folder.Change, now time.Time) (string, error) {
	info, err := fsys.Lstat(c.Path)
	if err != nil {
		return "", err
	}
	if info.Kind != folder.KindFile || info.Size != c.New.Size || info.MTime != c.New.MTime || info.Inode != c.New.Inode || info.Ctime != c.New.Ctime {
		return "", ErrChangedAgain
	}
	aside := fmt.Sprintf("%s/%s~%s", Dir, c.Path, now.UTC().Format("20060102T150405.000000000Z"))
	dir := path.Dir(aside)
	parts := strings.Split(dir, "/")
	for i := range parts {
		if err := fsys.Mkdir(strings.Join(parts[:i+1], "/"), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	if err := fsys.Rename(c.Path, aside); err != nil {
		return "", fmt.Errorf("moving %s aside: %w", c.Path, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return "", err
	}
	parent := "" // the folder's root
	if i := strings.LastIndexByte(c.Path, '/'); i >= 0 {
		parent = c.Path[:i]
	}
	return aside, fsys.SyncDir(parent)
}

// Files are the damaged files of a folder not written again yet.
type Files struct {
	mu sync.Mutex
	m  map[string]file
}

type file struct {
	aside string // where the damaged copy went, or why it could not be moved
	since time.Time
}

// MovedAside notes that the damaged file at p was moved to aside.
func (f *Files) MovedAside(p, aside string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]file{}
	}
	f.m[p] = file{aside: aside, since: now}
}

// NotMoved notes that the damaged file at p could not be moved aside
// (err), unless it is noted already: it is neither recorded nor repaired,
// and status says so until it is.
func (f *Files) NotMoved(p string, err error, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]file{}
	}
	if _, ok := f.m[p]; !ok {
		f.m[p] = file{aside: "(not moved: " + err.Error() + ")", since: now}
	}
}

// Repaired notes that p was written again and returns where its damaged
// copy went, if it was a damaged file.
func (f *Files) Repaired(p string) (aside string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.m[p]
	if ok {
		delete(f.m, p)
	}
	return d.aside, ok
}

// Errors are status's errors[] items of the damaged files, by path.
func (f *Files) Errors() []api.PathMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []api.PathMessage
	for _, p := range slices.Sorted(maps.Keys(f.m)) {
		out = append(out, api.PathMessage{Code: api.CodeCorrupt, Path: p, Reason: fmt.Sprintf(
			"the file's content changed without an edit (damage on the disk): the damaged copy is kept at %s; the recorded version is being written again from this device's other files, peers or the relay", f.m[p].aside)})
	}
	return out
}
