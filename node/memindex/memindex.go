package memindex

import (
	"container/heap"
	"iter"
	"maps"
	"slices"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Index is the folder index in memory. The zero value is not ready; use
// New. It is not safe for concurrent use.
type Index struct {
	recs     map[string]vaultdb.Record
	children map[string]map[string]struct{} // dir -> indexed paths directly in it (and dirs leading to indexed paths)

	files, dirs int
	bytes       int64
	changes     uint64              // counts Set calls (Changes)
	conflicts   map[string]struct{} // files named like conflict copies
}

// New returns an empty index.
func New() *Index {
	return &Index{recs: map[string]vaultdb.Record{}, children: map[string]map[string]struct{}{}}
}

// Get returns the record at p.
func (x *Index) Get(p string) (vaultdb.Record, bool) {
	r, ok := x.recs[p]
	return r, ok
}

// Rec returns the record at p, or the zero record.
func (x *Index) Rec(p string) vaultdb.Record { return x.recs[p] }

// Has reports whether p is indexed.
func (x *Index) Has(p string) bool {
	_, ok := x.recs[p]
	return ok
}

// Changes is a number that grows with every Set (a record set or
// removed): equal numbers mean the same records at the same paths.
func (x *Index) Changes() uint64 { return x.changes }

// Len is how many paths are indexed.
func (x *Index) Len() int { return len(x.recs) }

// Files is how many files are indexed; Dirs how many directories; Bytes
// the files' total size.
func (x *Index) Files() int   { return x.files }
func (x *Index) Dirs() int    { return x.dirs }
func (x *Index) Bytes() int64 { return x.bytes }

// Set records rec at p (Kind 0: removes p) and returns what was there.
func (x *Index) Set(p string, rec vaultdb.Record) (old vaultdb.Record, had bool) {
	x.changes++
	old, had = x.recs[p]
	if had {
		x.count(p, old, -1)
	}
	if rec.Kind == 0 {
		delete(x.recs, p)
		x.unlink(p)
		return old, had
	}
	x.count(p, rec, +1)
	x.recs[p] = rec
	x.link(p)
	return old, had
}

// ShareChunks makes every record whose chunk list equals listOf's for it
// hold listOf's list instead of its own, and returns how many did: a folder
// index loaded from disk holds its own copy of the chunk lists the version
// graph holds too (about 70 bytes a chunk, 2.2 MB for each GiB of files),
// and one copy is enough (chunk lists are never changed in place).
func (x *Index) ShareChunks(listOf func(r vaultdb.Record) []entry.ChunkRef) int {
	shared := 0
	for p, r := range x.recs {
		if len(r.Chunks) == 0 {
			continue
		}
		if l := listOf(r); slices.Equal(r.Chunks, l) {
			r.Chunks = l
			x.recs[p] = r // an existing key: allowed while ranging
			shared++
		}
	}
	return shared
}

// All iterates over every path and record, in no particular order. The
// index must not change during the iteration.
func (x *Index) All() iter.Seq2[string, vaultdb.Record] { return maps.All(x.recs) }

// Subtree calls fn for p (when indexed) and every indexed path below it,
// in no particular order: its cost is the size of that subtree. The index
// must not change during the walk.
func (x *Index) Subtree(p string, fn func(path string, r vaultdb.Record)) {
	if r, ok := x.recs[p]; ok {
		fn(p, r)
	}
	for c := range x.children[p] {
		x.Subtree(c, fn)
	}
}

// ConflictCopies returns the indexed files named like conflict copies,
// sorted.
func (x *Index) ConflictCopies() []string {
	if len(x.conflicts) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(x.conflicts))
}

// NumConflictCopies is len(ConflictCopies()) without the list.
func (x *Index) NumConflictCopies() int { return len(x.conflicts) }

// FirstAfter returns, in order, the first n paths after cursor that keep
// accepts (all of them when n <= 0), and whether more were left out. It
// keeps at most n paths at a time (a max-heap of the smallest so far), so
// a slice of a large folder costs one pass over the index and no sort of
// it.
func (x *Index) FirstAfter(cursor string, n int, keep func(string, vaultdb.Record) bool) (paths []string, more bool) {
	h := &pathHeap{}
	for p, r := range x.recs {
		if p <= cursor || !keep(p, r) {
			continue
		}
		switch {
		case n <= 0 || h.Len() < n:
			heap.Push(h, p)
		case p < (*h)[0]:
			(*h)[0] = p
			heap.Fix(h, 0)
			more = true
		default:
			more = true
		}
	}
	paths = []string(*h)
	slices.Sort(paths)
	return paths, more
}

// count counts rec at p in (sign +1) or out (sign -1).
func (x *Index) count(p string, rec vaultdb.Record, sign int) {
	switch rec.Kind {
	case entry.KindFile:
		x.files += sign
		x.bytes += int64(sign) * int64(rec.Size)
		if protocol.IsConflictCopy(p) {
			if sign > 0 {
				if x.conflicts == nil {
					x.conflicts = map[string]struct{}{}
				}
				x.conflicts[p] = struct{}{}
			} else {
				delete(x.conflicts, p)
			}
		}
	case entry.KindDir:
		x.dirs += sign
	}
}

// ParentDir returns the folder path of p's directory ("" for the root).
func ParentDir(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return ""
}

// link records p (and its ancestors) in the child sets.
func (x *Index) link(p string) {
	for p != "" {
		d := ParentDir(p)
		kids := x.children[d]
		if kids == nil {
			kids = map[string]struct{}{}
			x.children[d] = kids
		}
		if _, ok := kids[p]; ok {
			return
		}
		kids[p] = struct{}{}
		p = d
	}
}

// unlink removes p from the child sets once neither it nor anything below
// it is indexed.
func (x *Index) unlink(p string) {
	for p != "" {
		if _, ok := x.recs[p]; ok || len(x.children[p]) > 0 {
			return
		}
		d := ParentDir(p)
		delete(x.children[d], p)
		if len(x.children[d]) == 0 {
			delete(x.children, d)
		}
		p = d
	}
}

// pathHeap is a max-heap of paths (container/heap).
type pathHeap []string

func (h pathHeap) Len() int           { return len(h) }
func (h pathHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h pathHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pathHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *pathHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
