package folder

import (
	"io"
	"io/fs"
)

// FS is the file-system seam: every disk operation of the scanner and the
// applier goes through it. Paths are relative to the folder root and
// slash-separated; "" names the root itself (ReadDir, SyncDir, Lstat).
// Implementations refuse, with ErrBadPath or ErrSymlinkParent, any path
// that is absolute, has "..", "." or empty components, or whose parent
// directories include a symlink; they never follow a symlink in the last
// component either (Lstat, Readlink, Remove, Rename act on the link;
// Open, Chmod and Chtimes refuse it). Errors for missing paths satisfy
// errors.Is(err, fs.ErrNotExist), existing ones fs.ErrExist.
//
// Implementations are safe for concurrent use.
type FS interface {
	// Lstat describes path without following a final symlink.
	Lstat(path string) (FileInfo, error)
	// ReadDir lstats every entry of dir, sorted by name.
	ReadDir(dir string) ([]FileInfo, error)
	// Open opens a regular file for reading (ErrNotRegular otherwise).
	Open(path string) (File, error)
	// CreateTemp creates a new file with mode 0600 in dir, named
	// prefix + random suffix, opened for writing. File.Path tells its path.
	CreateTemp(dir, prefix string) (File, error)
	// Rename moves from onto to, replacing a file or symlink at to (or an
	// empty directory when from is one), atomically as POSIX rename(2).
	Rename(from, to string) error
	// Remove deletes a file, a symlink or an empty directory.
	Remove(path string) error
	// Mkdir creates one directory; its parent must exist.
	Mkdir(path string, perm fs.FileMode) error
	// Symlink creates path as a symlink holding target (never resolved).
	Symlink(target, path string) error
	// Readlink returns a symlink's target.
	Readlink(path string) (string, error)
	// Chmod sets the permission bits of a file or directory.
	Chmod(path string, perm fs.FileMode) error
	// Chtimes sets the modification time (ns since the epoch).
	Chtimes(path string, mtime int64) error
	// SyncDir makes dir's entries (creations, renames, removals) durable.
	SyncDir(dir string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	// Sync makes the file's content and metadata durable.
	Sync() error
	// Stat describes the open file (fstat).
	Stat() (FileInfo, error)
	// Path is the file's path relative to the FS root.
	Path() string
}

// AtomicReplacer is implemented by file systems that can put an item under
// a name with no window in which a concurrent writer's item there is
// destroyed unseen: Linux (renameat2) and MemFS. The applier uses it when
// offered (see Applier); elsewhere a change made between its last check
// and its rename can be overwritten. A method returns an error matching
// errors.ErrUnsupported when the underlying file system cannot do it; the
// caller then falls back to Rename.
type AtomicReplacer interface {
	// RenameNoReplace moves from onto to, which must not exist: an error
	// matching fs.ErrExist otherwise, and nothing changes.
	RenameNoReplace(from, to string) error
	// Exchange swaps the items at a and b, which must both exist, in one
	// step.
	Exchange(a, b string) error
}

// DirOpener is implemented by file systems that can hold a directory open
// and act on the names in it without resolving the directory's path again
// (OSFS on Linux: openat, fstatat, renameat2 relative to one descriptor).
// The applier opens each directory a batch writes into once; that is most
// of what makes a batch of small files cheap (see docs/folder.md). A file
// system without it is used through its path methods, one Dir per
// directory all the same (MemFS, OSFS elsewhere).
type DirOpener interface {
	// OpenDir opens dir, which must be a directory reached without a
	// symlink (the same checks as ReadDir).
	OpenDir(dir string) (Dir, error)
}

// Dir is an open directory of an FS. Names are single components (no "/",
// not "", "." or ".."; ErrBadPath otherwise) and are never followed when
// they are symlinks. Operations act on the directory that was opened,
// even if it has been moved or replaced under its path since: the
// applier holds one only for the duration of a batch. Errors match
// fs.ErrNotExist and fs.ErrExist as FS's do.
type Dir interface {
	// Lstat describes name without following a symlink.
	Lstat(name string) (FileInfo, error)
	// CreateTemp creates a new file with mode 0600 named prefix + random
	// suffix, opened for writing; File.Path is its path from the FS root.
	CreateTemp(prefix string) (File, error)
	// Remove deletes a file, a symlink or an empty directory.
	Remove(name string) error
	// Rename moves from onto to within the directory, as FS.Rename.
	Rename(from, to string) error
	// RenameNoReplace and Exchange are AtomicReplacer's, within the
	// directory; errors.ErrUnsupported where the FS cannot do them.
	RenameNoReplace(from, to string) error
	Exchange(a, b string) error
	// Close releases the directory.
	Close() error
}

// MetaFile is implemented by Files that can set their own permission bits
// and mtime through the open descriptor (fchmod, futimens): no path is
// resolved, and the file is the one written even if its name has been
// taken since. The applier uses it when offered, FS.Chmod and FS.Chtimes
// otherwise.
type MetaFile interface {
	Chmod(perm fs.FileMode) error
	// Chtimes sets the modification time (ns since the epoch).
	Chtimes(mtime int64) error
}
