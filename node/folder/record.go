package folder

import "io/fs"

// Kind is what a path holds on disk.
type Kind uint8

const (
	// KindNone means nothing is there.
	KindNone Kind = iota
	// KindFile is a regular file.
	KindFile
	// KindDir is a directory.
	KindDir
	// KindSymlink is a symbolic link, recorded by its target and never
	// followed.
	KindSymlink
	// KindOther is anything else (device, socket, FIFO): never synced.
	KindOther
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	}
	return "other"
}

// FileInfo is the lstat of one path: what the FS reports, never following
// a symlink.
type FileInfo struct {
	Name  string      // base name as stored on disk
	Kind  Kind        // never KindNone
	Size  int64       // bytes for files, 0 for directories
	Mode  fs.FileMode // permission bits only (fs.ModePerm)
	MTime int64       // modification time, ns since the Unix epoch
	Inode uint64      // 0 where the platform has none
	Ctime int64       // status change time in ns, 0 where the platform has none
}

// Record is what the caller's index holds for one path: the metadata this
// device last saw on disk (from a scan or an apply Outcome) and the content
// hash. Size, MTime, Inode, Ctime and Mode must be the local values, not a
// peer's: the scanner and the applier compare them with lstat.
type Record struct {
	Path   string
	Kind   Kind
	Size   int64
	MTime  int64
	Inode  uint64
	Ctime  int64
	Mode   fs.FileMode
	Target string   // symlink target, for KindSymlink
	Hash   [32]byte // content hash (files) as the Hasher computed it
}

// Index is the caller's view of the folder: what it last recorded. The
// scanner and applier only read it. Implementations must be safe for
// concurrent use if the caller scans and applies at the same time.
type Index interface {
	// Lookup returns the live record at path (exact bytes), or false if
	// there is none (never recorded, or recorded as deleted).
	Lookup(path string) (Record, bool)
	// Range calls fn for every live record at prefix or below it (prefix
	// "" is the whole folder), in any order, until fn returns false.
	Range(prefix string, fn func(Record) bool)
}

// CountedIndex is an Index that can also count its live records: a whole
// scan that found every one of them on disk, while none was set or
// removed, has no deletion to look for and skips the pass over the whole
// index that finds them (0.12 s of a rescan of 100,000 files).
type CountedIndex interface {
	Index
	// Count returns how many live records the index holds, and a number
	// that changes whenever a record is set or removed.
	Count() (records int, changes uint64)
}

// MapIndex is an Index over a map, for tests, benchmarks and small
// callers. It is not safe for concurrent mutation; reads may be concurrent.
type MapIndex map[string]Record

// Lookup implements Index.
func (m MapIndex) Lookup(path string) (Record, bool) {
	r, ok := m[path]
	return r, ok
}

// Range implements Index.
func (m MapIndex) Range(prefix string, fn func(Record) bool) {
	for p, r := range m {
		if !underPrefix(p, prefix) {
			continue
		}
		if !fn(r) {
			return
		}
	}
}

// Put records r under r.Path.
func (m MapIndex) Put(r Record) { m[r.Path] = r }

// underPrefix reports whether p is prefix or lies below it.
func underPrefix(p, prefix string) bool {
	if prefix == "" || p == prefix {
		return true
	}
	return len(p) > len(prefix) && p[len(prefix)] == '/' && p[:len(prefix)] == prefix
}

// sameMeta reports whether the disk item info still is what r recorded:
// same kind, and for files and symlinks the same size, mtime, inode, ctime
// and mode. Directories compare kind and mode only (their mtime moves with
// every entry added or removed).
func sameMeta(r Record, info FileInfo) bool {
	if r.Kind != info.Kind || r.Mode != info.Mode {
		return false
	}
	if info.Kind == KindDir {
		return true
	}
	return r.Size == info.Size && r.MTime == info.MTime && r.Inode == info.Inode && r.Ctime == info.Ctime
}

// RecordOf returns the record for path built from a fresh lstat; the caller
// fills Hash (and Target for symlinks).
func RecordOf(path string, info FileInfo) Record {
	return Record{Path: path, Kind: info.Kind, Size: info.Size, MTime: info.MTime, Inode: info.Inode, Ctime: info.Ctime, Mode: info.Mode}
}
