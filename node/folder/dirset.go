package folder

import (
	"errors"
	"fmt"
)

// nameOps is what the commit steps do to paths: the FS itself, or a
// dirSet that routes them through directories held open.
type nameOps interface {
	Lstat(p string) (FileInfo, error)
	Remove(p string) error
	Rename(from, to string) error
}

// dirSet holds open, for one WriteFile or WriteFiles call, every directory
// the call writes into, so that each step of each file (lstat, create the
// temp file, rename, lstat again) is one system call relative to an open
// descriptor instead of a walk of the whole path through the root (which
// costs an openat and a close per parent directory, and the FS's own
// symlink checks, every time). A directory is created if missing and
// checked (no symlink on the way, a directory) once, when first opened;
// what a file's steps act on afterwards is that directory, even if it is
// moved or replaced during the call. The set is also a nameOps and an
// AtomicReplacer over full paths: a path in a held directory goes through
// it, any other to the FS.
type dirSet struct {
	a    *Applier
	dirs map[string]Dir
	errs map[string]error
	buf  []byte // see copyBuf
}

func (a *Applier) newDirSet() *dirSet {
	return &dirSet{a: a, dirs: map[string]Dir{}, errs: map[string]error{}}
}

// open returns dir held open, creating it and its parents first as needed
// (mkdirs' rules). A failure is remembered: the call's other files in dir
// fail the same way without trying again.
func (s *dirSet) open(dir string) (Dir, error) {
	if d, ok := s.dirs[dir]; ok {
		return d, nil
	}
	if err, ok := s.errs[dir]; ok {
		return nil, err
	}
	d, err := s.openNew(dir)
	if err != nil {
		s.errs[dir] = err
		return nil, err
	}
	s.dirs[dir] = d
	return d, nil
}

func (s *dirSet) openNew(dir string) (Dir, error) {
	if err := s.a.makeDirs(dir); err != nil {
		return nil, err
	}
	if o, ok := s.a.cfg.FS.(DirOpener); ok {
		d, err := o.OpenDir(dir)
		if err != nil {
			return nil, fmt.Errorf("opening directory %q: %w", dir, err)
		}
		return d, nil
	}
	return &pathDir{fs: s.a.cfg.FS, dir: dir}, nil
}

// copyBuf returns the call's copy buffer: io.Copy would allocate (and
// zero) 32 KiB per file, most of a small file's garbage.
func (s *dirSet) copyBuf() []byte {
	if s.buf == nil {
		s.buf = make([]byte, 32<<10)
	}
	return s.buf
}

// close releases every held directory.
func (s *dirSet) close() {
	for p, d := range s.dirs {
		if err := d.Close(); err != nil {
			s.a.cfg.Logger.Warn("closing directory", "path", p, "err", err)
		}
	}
	clear(s.dirs)
}

// held returns the open directory of p, if any, and p's last component.
func (s *dirSet) held(p string) (Dir, string, bool) {
	dir, base := splitPath(p)
	if base == "" {
		return nil, "", false
	}
	d, ok := s.dirs[dir]
	return d, base, ok
}

// heldPair is held for two paths of the same held directory.
func (s *dirSet) heldPair(a, b string) (d Dir, na, nb string, ok bool) {
	da, _ := splitPath(a)
	db, _ := splitPath(b)
	if da != db {
		return nil, "", "", false
	}
	d, na, ok = s.held(a)
	if !ok {
		return nil, "", "", false
	}
	_, nb = splitPath(b)
	return d, na, nb, nb != ""
}

// Lstat implements nameOps.
func (s *dirSet) Lstat(p string) (FileInfo, error) {
	if d, name, ok := s.held(p); ok {
		return d.Lstat(name)
	}
	return s.a.cfg.FS.Lstat(p)
}

// Remove implements nameOps.
func (s *dirSet) Remove(p string) error {
	if d, name, ok := s.held(p); ok {
		return d.Remove(name)
	}
	return s.a.cfg.FS.Remove(p)
}

// Rename implements nameOps.
func (s *dirSet) Rename(from, to string) error {
	if d, a, b, ok := s.heldPair(from, to); ok {
		return d.Rename(a, b)
	}
	return s.a.cfg.FS.Rename(from, to)
}

// RenameNoReplace implements AtomicReplacer.
func (s *dirSet) RenameNoReplace(from, to string) error {
	if d, a, b, ok := s.heldPair(from, to); ok {
		return d.RenameNoReplace(a, b)
	}
	if ar, ok := s.a.cfg.FS.(AtomicReplacer); ok {
		return ar.RenameNoReplace(from, to)
	}
	return fmt.Errorf("rename %q without replace: %w", to, errors.ErrUnsupported)
}

// Exchange implements AtomicReplacer.
func (s *dirSet) Exchange(a, b string) error {
	if d, na, nb, ok := s.heldPair(a, b); ok {
		return d.Exchange(na, nb)
	}
	if ar, ok := s.a.cfg.FS.(AtomicReplacer); ok {
		return ar.Exchange(a, b)
	}
	return fmt.Errorf("exchange %q: %w", b, errors.ErrUnsupported)
}

// pathDir is a Dir over an FS without DirOpener: each method joins the
// directory's path and calls the FS, which resolves it again.
type pathDir struct {
	fs  FS
	dir string
}

func (d *pathDir) Lstat(name string) (FileInfo, error) { return d.fs.Lstat(joinPath(d.dir, name)) }
func (d *pathDir) CreateTemp(prefix string) (File, error) {
	return d.fs.CreateTemp(d.dir, prefix)
}
func (d *pathDir) Remove(name string) error { return d.fs.Remove(joinPath(d.dir, name)) }
func (d *pathDir) Rename(from, to string) error {
	return d.fs.Rename(joinPath(d.dir, from), joinPath(d.dir, to))
}

func (d *pathDir) RenameNoReplace(from, to string) error {
	if ar, ok := d.fs.(AtomicReplacer); ok {
		return ar.RenameNoReplace(joinPath(d.dir, from), joinPath(d.dir, to))
	}
	return fmt.Errorf("rename %q without replace: %w", joinPath(d.dir, to), errors.ErrUnsupported)
}

func (d *pathDir) Exchange(a, b string) error {
	if ar, ok := d.fs.(AtomicReplacer); ok {
		return ar.Exchange(joinPath(d.dir, a), joinPath(d.dir, b))
	}
	return fmt.Errorf("exchange %q: %w", joinPath(d.dir, b), errors.ErrUnsupported)
}

func (d *pathDir) Close() error { return nil }
