package pack

import (
	"io"
	"os"
)

// FS is the few file-system operations the store needs. It exists so that
// tests can inject disk-full and IO errors; OSFS is the real thing. Names
// are paths as the os package takes them.
//
// The goleveldb index does not go through FS: goleveldb has its own storage
// layer. Only pack files and their directory do.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Rename(oldname, newname string) error
	Remove(name string) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	MkdirAll(name string, perm os.FileMode) error
}

// File is an open file. The store writes at explicit offsets (WriteAt) and
// never relies on a file position, so a failed append can be cut off with
// Truncate and the next one written in its place.
type File interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

// OSFS is FS on the operating system's file system.
type OSFS struct{}

var _ FS = OSFS{}

// OpenFile opens name with os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Rename renames with os.Rename.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove removes with os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// ReadDir lists with os.ReadDir.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// Stat stats with os.Stat.
func (OSFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// MkdirAll creates with os.MkdirAll.
func (OSFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }

// syncDir fsyncs a directory so that file creations, renames and removals in
// it are durable.
func syncDir(fsys FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
