package resolve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
)

// The choices of a resolution (api.ResolveRequest.Keep; "file" is a
// request with Take).
const (
	KeepWinner = "winner"
	KeepCopy   = "copy"
	KeepBoth   = "both"
	KeepFile   = "file"
)

// Vault is one vault as a resolution acts on it.
type Vault interface {
	// Folder is the vault's folder, as the user named it.
	Folder() string
	// LockScans and UnlockScans hold the vault's scans from the check to
	// the record: a scan in between would record the change as an
	// ordinary edit, superseding nothing it did not see.
	LockScans()
	UnlockScans()
	// FS is the folder's file system; paths are relative to its root.
	FS() folder.FS
	// IndexedFile returns the size and modification time (ns) the folder
	// index holds for path as a regular file: what the last scan saw on
	// disk. ok is false when the index holds no file there.
	IndexedFile(path string) (size, mtime int64, ok bool)
	// ConflictCopies lists the conflict copies the folder index holds.
	ConflictCopies() []string
	// DeviceName is the name of the member whose short ID is short, or
	// "" when it has none (or none matches).
	DeviceName(short string) string
	// Record scans paths and records what changed, each new version
	// superseding every head of its path this device had applied. held
	// reports that this device may not author yet: the files stay
	// written and a later rescan records them.
	Record(ctx context.Context, paths []string) (held bool, err error)
}

// Source opens the file a resolution takes as its result (Take).
type Source func(path string) (io.ReadCloser, error)

// Run carries out req in v, where rel is req.Path relative to v's folder
// (slash-separated). open reads req.Take, when given.
//
// Errors wrap api.ErrInvalid (a request that cannot be carried out as
// asked), api.ErrNotFound (no such copy) or api.ErrConflict (the folder
// no longer matches the request: the copy was changed or removed on disk).
// Nothing is changed when an error is returned before the folder was
// written; an error after it (recording) leaves the change on disk for
// the next scan to record.
func Run(ctx context.Context, v Vault, rel string, req api.ResolveRequest, open Source) (api.ResolveResult, error) {
	keep, err := choice(req)
	if err != nil {
		return api.ResolveResult{}, err
	}
	v.LockScans()
	defer v.UnlockScans()
	copyPath, of, err := pick(v, rel)
	if err != nil {
		return api.ResolveResult{}, err
	}
	res := api.ResolveResult{Folder: v.Folder(), Copy: copyPath, Of: of, Kept: keep}
	if of == "" && keep != KeepWinner {
		return res, invalid("%s does not say which file it is a copy of (its name was shortened): only --keep winner (removing it) is possible; move or rename it by hand otherwise", copyPath)
	}
	fsys := v.FS()
	if err := checkCopy(fsys, v, copyPath); err != nil {
		return res, err
	}
	var paths []string
	switch keep {
	case KeepWinner:
		err = fsys.Remove(copyPath)
		paths = []string{copyPath}
	case KeepCopy:
		if err = checkTarget(fsys, v, of); err == nil {
			err = fsys.Rename(copyPath, of)
		}
		paths = []string{copyPath, of}
	case KeepBoth:
		var to string
		if to, err = freeName(fsys, of, v.DeviceName(authorOf(copyPath))); err == nil {
			err = fsys.Rename(copyPath, to)
			res.Renamed = to
		}
		paths = []string{copyPath, to}
	case KeepFile:
		if err = checkTarget(fsys, v, of); err == nil {
			err = writeFrom(ctx, fsys, of, req.Take, open)
		}
		if err == nil {
			err = fsys.Remove(copyPath)
		}
		paths = []string{copyPath, of}
	}
	if err != nil {
		return res, fmt.Errorf("resolving %s: %w", copyPath, err)
	}
	if err := fsys.SyncDir(dirOf(copyPath)); err != nil {
		return res, fmt.Errorf("resolving %s: syncing its directory: %w", copyPath, err)
	}
	held, err := v.Record(ctx, paths)
	if err != nil {
		return res, fmt.Errorf("resolved %s on disk, but recording it failed (a later scan records it): %w", copyPath, err)
	}
	res.Held = held
	return res, nil
}

// choice is the resolution req asks for.
func choice(req api.ResolveRequest) (string, error) {
	switch {
	case req.Take != "" && req.Keep != "":
		return "", invalid("give either keep or a file to take, not both")
	case req.Take != "":
		return KeepFile, nil
	}
	switch req.Keep {
	case KeepWinner, KeepCopy, KeepBoth:
		return req.Keep, nil
	case "":
		return "", invalid("say what to keep: winner, copy or both (or give a file to take)")
	}
	return "", invalid("keep %q: want winner, copy or both", req.Keep)
}

// pick finds the copy rel names: rel itself when it is a conflict copy
// the index holds, or the one copy of rel. It returns the copy and the
// path it is a copy of ("" when its name does not say).
func pick(v Vault, rel string) (copyPath, of string, err error) {
	if protocol.IsConflictCopy(rel) {
		if _, _, ok := v.IndexedFile(rel); !ok {
			return "", "", fmt.Errorf("%s: %w", rel, api.Classified(api.ErrNotFound, "no such conflict copy in the folder (`weft conflicts` lists them)"))
		}
		if o, ok := protocol.ParseConflictName(rel); ok {
			of = o.Of
		}
		return rel, of, nil
	}
	var copies []string
	for _, c := range v.ConflictCopies() {
		if o, ok := protocol.ParseConflictName(c); ok && o.Of == rel {
			copies = append(copies, c)
		}
	}
	slices.Sort(copies)
	switch len(copies) {
	case 0:
		return "", "", fmt.Errorf("%s: %w", rel, api.Classified(api.ErrNotFound, "no conflict copy of this file (`weft conflicts` lists them)"))
	case 1:
		return copies[0], rel, nil
	}
	return "", "", invalid("%s has %d conflict copies; name the one to resolve: %s", rel, len(copies), strings.Join(copies, ", "))
}

// checkCopy refuses a copy that is not on disk now as the last scan saw
// it: gone, not a regular file, or changed since (an edit not recorded
// yet, which keep winner would delete unrecorded).
func checkCopy(fsys folder.FS, v Vault, p string) error {
	fi, err := fsys.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", p, api.Classified(api.ErrConflict, "the conflict copy is no longer in the folder"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if fi.Kind != folder.KindFile {
		return fmt.Errorf("%s: %w", p, api.Classified(api.ErrConflict, "the conflict copy is no longer a regular file"))
	}
	return unchanged(v, p, fi)
}

// checkTarget refuses to write over what is not a regular file (a
// directory or a symlink at the name is the person's to move) or over a
// file changed since the last scan (an edit not recorded yet would be
// lost with no version of it anywhere).
func checkTarget(fsys folder.FS, v Vault, p string) error {
	fi, err := fsys.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if fi.Kind != folder.KindFile {
		return fmt.Errorf("%s: %w", p, api.Classified(api.ErrConflict, "the name now holds something that is not a regular file; move it first"))
	}
	return unchanged(v, p, fi)
}

// unchanged refuses a file whose size or modification time differs from
// what the index holds, or that the index does not hold.
func unchanged(v Vault, p string, fi folder.FileInfo) error {
	size, mtime, ok := v.IndexedFile(p)
	if !ok || size != fi.Size || mtime != fi.MTime {
		return fmt.Errorf("%s: %w", p, api.Classified(api.ErrConflict,
			"the file changed since it was last scanned (an edit not recorded yet); wait for the scan (or run `weft scan`) and look again"))
	}
	return nil
}

// writeFrom writes the content of src (read through open) to p through a
// temporary file beside it, synced before it takes the name.
func writeFrom(ctx context.Context, fsys folder.FS, p, src string, open Source) (err error) {
	r, err := open(src)
	if err != nil {
		return fmt.Errorf("%w: %w", api.Classified(api.ErrInvalid, "reading the file to take"), err)
	}
	defer r.Close()
	tmp, err := fsys.CreateTemp(dirOf(p), folder.TempPrefix)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = fsys.Remove(tmp.Path())
		}
	}()
	if _, err = io.Copy(tmp, ctxReader{ctx, r}); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return fsys.Rename(tmp.Path(), p)
}

// ctxReader reads r until ctx ends: a request given up stops the copy of a
// file taken as the result (the vault's scans wait for it).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// authorOf is the short device ID a conflict copy's name carries, or "".
func authorOf(copyPath string) string {
	o, ok := protocol.ParseConflictName(copyPath)
	if !ok {
		return ""
	}
	return o.Author
}

// freeName is where a kept copy of of goes: beside it, named after the
// device whose content it holds, "notes (laptop).md", then "notes (laptop
// 2).md" and on while a name is taken. who is the device's name, or its
// short ID when the name cannot be part of a file name.
func freeName(fsys folder.FS, of, who string) (string, error) {
	dir, base := path.Split(of)
	stem, ext := base, ""
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		stem, ext = base[:i], base[i:]
	}
	if who == "" || strings.ContainsAny(who, `/\:*?"<>|`) || !utf8.ValidString(who) {
		who = "another device"
	}
	for n := 1; n <= 100; n++ {
		tag := who
		if n > 1 {
			tag = fmt.Sprintf("%s %d", who, n)
		}
		name := stem + " (" + tag + ")" + ext
		if len(name) > protocol.MaxNameBytes {
			return "", invalid("%s: the name of a kept copy would be longer than %d bytes; rename the copy by hand", of, protocol.MaxNameBytes)
		}
		p := dir + name
		if _, err := fsys.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", invalid("%s: a hundred names for a kept copy are taken; rename the copy by hand", of)
}

// dirOf is the directory of folder path p, "" for the folder's root.
func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w", api.Classified(api.ErrInvalid, fmt.Sprintf(format, a...)))
}
