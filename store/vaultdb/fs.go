package vaultdb

import (
	"io"
	"os"
)

// FS is the file-system operations the log files go through. It is a seam
// for tests, which inject disk-full and IO errors on writes and syncs; OSFS
// is the real thing. goleveldb does not go through it: it has its own
// storage layer, and the index it holds can always be rebuilt.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	ReadDir(name string) ([]os.DirEntry, error)
	MkdirAll(name string, perm os.FileMode) error
	Rename(oldname, newname string) error
}

// File is an open log file. Writes go to explicit offsets, so a failed
// append is cut off with Truncate and the next one written in its place.
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

// Remove removes name with os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// ReadDir lists name with os.ReadDir.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// MkdirAll creates name with os.MkdirAll.
func (OSFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }

// Rename renames oldname to newname with os.Rename.
func (OSFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// syncDir fsyncs a directory so that file creations and removals in it are
// durable.
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
