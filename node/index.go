package node

import (
	"io/fs"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// indexView lets the folder's scanner and applier read the vault's folder
// index. It is safe for concurrent use.
type indexView struct{ v *vault }

// Lookup implements folder.Index.
func (x indexView) Lookup(path string) (folder.Record, bool) {
	x.v.mu.Lock()
	r, ok := x.v.index.Get(path)
	x.v.mu.Unlock()
	if !ok {
		return folder.Record{}, false
	}
	return folderRecord(path, r), true
}

// Count implements folder.CountedIndex.
func (x indexView) Count() (records int, changes uint64) {
	x.v.mu.Lock()
	defer x.v.mu.Unlock()
	return x.v.index.Len(), x.v.index.Changes()
}

// Range implements folder.Index. It walks the records at and below prefix
// (memindex.Index.Subtree), so its cost is the size of that subtree, not
// of the whole index, and iterates over a snapshot of their paths, so fn
// may call Lookup. The snapshot holds only the paths (which share the
// index's strings), and each record is looked up again, rangeBatch at a
// time, when fn is about to get it: a snapshot of whole records cost a
// full scan of 100,000 files 53 MB of allocations at its end (112 bytes a
// record, grown by append), when the heap was at its largest
// (docs/benchmarks.md, "Footprint at 100,000 small files"). A record
// removed after the snapshot is skipped, as if the snapshot had been taken
// after the removal.
func (x indexView) Range(prefix string, fn func(folder.Record) bool) {
	v := x.v
	v.mu.Lock()
	var paths []string
	if prefix == "" {
		paths = make([]string, 0, v.index.Len())
	}
	v.index.Subtree(prefix, func(p string, _ vaultdb.Record) { paths = append(paths, p) })
	v.mu.Unlock()
	var batch [rangeBatch]folder.Record
	for len(paths) > 0 {
		n := 0
		v.mu.Lock()
		for len(paths) > 0 && n < len(batch) {
			p := paths[0]
			paths = paths[1:]
			if r, ok := v.index.Get(p); ok {
				batch[n] = folderRecord(p, r)
				n++
			}
		}
		v.mu.Unlock()
		for _, r := range batch[:n] {
			if !fn(r) {
				return
			}
		}
	}
}

// rangeBatch is how many records Range looks up under one hold of the
// vault's lock.
const rangeBatch = 256

func under(p, prefix string) bool {
	return prefix == "" || p == prefix || (len(p) > len(prefix) && p[len(prefix)] == '/' && p[:len(prefix)] == prefix)
}

// folderRecord converts an index record into the folder package's form.
func folderRecord(path string, r vaultdb.Record) folder.Record {
	out := folder.Record{
		Path: path, Size: int64(r.Size), MTime: r.MTime, Inode: r.Inode, Ctime: r.Ctime,
		Mode: fs.FileMode(r.Mode).Perm(), Target: r.Target, Hash: r.Hash,
	}
	switch r.Kind {
	case entry.KindFile:
		out.Kind = folder.KindFile
	case entry.KindDir:
		out.Kind = folder.KindDir
	case entry.KindSymlink:
		out.Kind = folder.KindSymlink
	}
	return out
}

// shareChunkListsLocked makes each index record whose chunk list is its
// version's keep the graph's copy, not one of its own (memindex
// ShareChunks): at open the two were decoded from different files. v.mu
// must be held (or v not yet shared).
func (v *vault) shareChunkListsLocked() {
	v.index.ShareChunks(func(r vaultdb.Record) []entry.ChunkRef {
		body, _ := v.view.Body(r.Version)
		return body.Chunks
	})
}
