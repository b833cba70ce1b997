package folder

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// OSFS is the FS of a real directory. It resolves every path through an
// os.Root, so the kernel refuses any escape from the folder even if a
// directory is swapped for a symlink between a check and a use, and on top
// of that refuses paths whose parent directories include a symlink (which
// os.Root would follow when the link stays inside the root).
type OSFS struct {
	root atomic.Pointer[os.Root]
	dir  string
}

// OpenOS returns the FS rooted at dir, which must exist.
func OpenOS(dir string) (*OSFS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening folder root: %w", err)
	}
	o := &OSFS{dir: dir}
	o.root.Store(r)
	return o, nil
}

// r is the root every operation resolves through.
func (o *OSFS) r() *os.Root { return o.root.Load() }

// Dir returns the directory the FS is rooted at.
func (o *OSFS) Dir() string { return o.dir }

// Reopen roots the FS at whatever directory is at Dir's path now. The
// root is a directory handle, so a folder moved away (or replaced by
// another directory) while weft runs is still the one the FS reads and
// writes; the folder guard (node/) calls Reopen when the path no longer
// leads to that directory, so weft follows the path the user configured,
// never a directory moved out of it. An operation in flight on the old
// root may fail; the caller retries it.
func (o *OSFS) Reopen() error {
	r, err := os.OpenRoot(o.dir)
	if err != nil {
		return fmt.Errorf("opening folder root: %w", err)
	}
	if old := o.root.Swap(r); old != nil {
		old.Close()
	}
	return nil
}

// RootIs reports whether the directory the FS is rooted at is at (the
// same file system and inode, os.SameFile: a drive mounted over the path
// has a root inode that may match the old directory's, but not its
// device).
func (o *OSFS) RootIs(at os.FileInfo) (bool, error) {
	ri, err := o.r().Stat(".")
	if err != nil {
		return false, err
	}
	return os.SameFile(ri, at), nil
}

// Close releases the root. The FS must not be used afterwards.
func (o *OSFS) Close() error { return o.r().Close() }

// name checks p and converts it to an os.Root name; "" (the root) is
// allowed only when root is true.
func (o *OSFS) name(p string, root bool) (string, error) {
	if p == "" && root {
		return ".", nil
	}
	if err := checkSyntax(p); err != nil {
		return "", err
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		fi, err := o.r().Lstat(p[:i])
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return p, nil // the operation itself will fail
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%w: %q (at %q)", ErrSymlinkParent, p, p[:i])
		}
		if !fi.IsDir() {
			return p, nil // ENOTDIR follows
		}
	}
	return p, nil
}

// Lstat implements FS.
func (o *OSFS) Lstat(p string) (FileInfo, error) {
	n, err := o.name(p, true)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := o.r().Lstat(n)
	if err != nil {
		return FileInfo{}, err
	}
	return infoOf(fi), nil
}

// dirName checks dir like name and also refuses a final component that
// is a symlink or not a directory: os.Root would follow it.
func (o *OSFS) dirName(dir string) (string, error) {
	n, err := o.name(dir, true)
	if err != nil || n == "." {
		return n, err
	}
	fi, err := o.r().Lstat(n)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%w: %q is a symlink", ErrSymlinkParent, dir)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %q is not a directory", ErrParentNotDir, dir)
	}
	return n, nil
}

// ReadDir implements FS.
func (o *OSFS) ReadDir(dir string) ([]FileInfo, error) {
	n, err := o.dirName(dir)
	if err != nil {
		return nil, err
	}
	f, err := o.r().Open(n)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out, err := readDirInfo(f)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Open implements FS. It lstats first and compares the opened file with
// that lstat, so a symlink swapped in between is not read through.
func (o *OSFS) Open(p string) (File, error) {
	n, err := o.name(p, false)
	if err != nil {
		return nil, err
	}
	fi, err := o.r().Lstat(n)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %q", ErrNotRegular, p)
	}
	f, err := o.r().Open(n)
	if err != nil {
		return nil, err
	}
	got, err := f.Stat()
	if err != nil || !os.SameFile(fi, got) {
		f.Close()
		return nil, fmt.Errorf("%w: %q replaced while opening", ErrUnsettled, p)
	}
	return &osFile{f: f, path: p}, nil
}

// CreateTemp implements FS.
func (o *OSFS) CreateTemp(dir, prefix string) (File, error) {
	if _, err := o.dirName(dir); err != nil {
		return nil, err
	}
	for range 10 {
		p := joinPath(dir, prefix+randomSuffix())
		n, err := o.name(p, false)
		if err != nil {
			return nil, err
		}
		f, err := o.r().OpenFile(n, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		return &osFile{f: f, path: p}, nil
	}
	return nil, fmt.Errorf("creating temp file in %q: %w", dir, fs.ErrExist)
}

// Rename implements FS.
func (o *OSFS) Rename(from, to string) error {
	a, err := o.name(from, false)
	if err != nil {
		return err
	}
	b, err := o.name(to, false)
	if err != nil {
		return err
	}
	return o.r().Rename(a, b)
}

// Remove implements FS.
func (o *OSFS) Remove(p string) error {
	n, err := o.name(p, false)
	if err != nil {
		return err
	}
	return o.r().Remove(n)
}

// Mkdir implements FS.
func (o *OSFS) Mkdir(p string, perm fs.FileMode) error {
	n, err := o.name(p, false)
	if err != nil {
		return err
	}
	return o.r().Mkdir(n, perm&fs.ModePerm)
}

// Symlink implements FS.
func (o *OSFS) Symlink(target, p string) error {
	n, err := o.name(p, false)
	if err != nil {
		return err
	}
	return o.r().Symlink(target, n)
}

// Readlink implements FS.
func (o *OSFS) Readlink(p string) (string, error) {
	n, err := o.name(p, false)
	if err != nil {
		return "", err
	}
	return o.r().Readlink(n)
}

// noLink checks p and refuses a symlink in its last component.
func (o *OSFS) noLink(p string) (string, error) {
	n, err := o.name(p, false)
	if err != nil {
		return "", err
	}
	fi, err := o.r().Lstat(n)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%w: %q is a symlink", ErrNotRegular, p)
	}
	return n, nil
}

// Chmod implements FS.
func (o *OSFS) Chmod(p string, perm fs.FileMode) error {
	n, err := o.noLink(p)
	if err != nil {
		return err
	}
	return o.r().Chmod(n, perm&fs.ModePerm)
}

// Chtimes implements FS.
func (o *OSFS) Chtimes(p string, mtime int64) error {
	n, err := o.noLink(p)
	if err != nil {
		return err
	}
	t := time.Unix(0, mtime)
	return o.r().Chtimes(n, t, t)
}

// SyncDir implements FS.
func (o *OSFS) SyncDir(dir string) error {
	n, err := o.dirName(dir)
	if err != nil {
		return err
	}
	f, err := o.r().Open(n)
	if err != nil {
		return err
	}
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(serr, cerr)
}

type osFile struct {
	f    *os.File
	path string
}

func (f *osFile) Read(b []byte) (int, error) { return f.f.Read(b) }

// ReadAt lets the node re-create a chunk from the middle of a file without
// reading everything before it.
func (f *osFile) ReadAt(b []byte, off int64) (int, error) { return f.f.ReadAt(b, off) }
func (f *osFile) Write(b []byte) (int, error)             { return f.f.Write(b) }
func (f *osFile) Close() error                            { return f.f.Close() }
func (f *osFile) Sync() error                             { return f.f.Sync() }
func (f *osFile) Path() string                            { return f.path }
func (f *osFile) Stat() (FileInfo, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return FileInfo{}, err
	}
	return infoOf(fi), nil
}

// infoOf converts an os FileInfo (from lstat) to a FileInfo.
func infoOf(fi fs.FileInfo) FileInfo {
	m := fi.Mode()
	info := FileInfo{Name: fi.Name(), Mode: m & fs.ModePerm, MTime: fi.ModTime().UnixNano()}
	switch {
	case m.IsRegular():
		info.Kind, info.Size = KindFile, fi.Size()
	case m.IsDir():
		info.Kind = KindDir
	case m&fs.ModeSymlink != 0:
		info.Kind, info.Size = KindSymlink, fi.Size()
	default:
		info.Kind = KindOther
	}
	info.Inode, info.Ctime = sysInfo(fi)
	return info
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
