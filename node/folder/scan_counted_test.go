package folder

import (
	"context"
	"io"
	"sync"
	"testing"
)

// countedIndex is a MapIndex that counts its records and changes
// (CountedIndex), safe for a Hasher to change while a scan reads it, and
// counts the scans' passes over it (Range).
type countedIndex struct {
	mu      sync.Mutex
	m       MapIndex
	changes uint64
	ranges  int
}

func (x *countedIndex) Lookup(p string) (Record, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.m.Lookup(p)
}

func (x *countedIndex) Range(prefix string, fn func(Record) bool) {
	x.mu.Lock()
	x.ranges++
	var recs []Record
	x.m.Range(prefix, func(r Record) bool { recs = append(recs, r); return true })
	x.mu.Unlock()
	for _, r := range recs {
		if !fn(r) {
			return
		}
	}
}

func (x *countedIndex) Count() (int, uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.m), x.changes
}

func (x *countedIndex) remove(p string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, p)
	x.changes++
}

// record records r's changes, as scanInto does for a MapIndex.
func (x *countedIndex) record(r Result) {
	x.mu.Lock()
	defer x.mu.Unlock()
	record(x.m, r)
	x.changes++
}

// hookHasher calls hook (once) before hashing path.
type hookHasher struct {
	path string
	hook func()
	once sync.Once
}

func (h *hookHasher) Hash(ctx context.Context, p string, r io.Reader, size int64) (HashResult, error) {
	if p == h.path {
		h.once.Do(h.hook)
	}
	return BLAKE3Hasher{}.Hash(ctx, p, r, size)
}

// TestScanCountedIndexDeletions: a whole scan over a CountedIndex that
// finds every record on disk skips the pass over the index that looks for
// deletions; every other scan still finds each deletion: a file gone, a
// directory that cannot be listed (nothing below it deleted), a record
// ignored now (not deleted), a record removed from the index while the
// walk ran, and a scan of some paths only.
func TestScanCountedIndexDeletions(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		ctx := context.Background()
		idx := &countedIndex{m: MapIndex{}}
		hasher := &hookHasher{}
		s, err := NewScanner(ScannerConfig{FS: fsys, Index: idx, Hasher: hasher, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		scan := func(what string, paths ...string) Result {
			t.Helper()
			idx.ranges = 0
			r, err := s.ScanWith(ctx, ScanOptions{Paths: paths})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			idx.record(r)
			return r
		}
		put(t, fsys, "a.txt", "alpha")
		put(t, fsys, "d/b.txt", "beta")
		put(t, fsys, "d/e/c.txt", "gamma")
		put(t, fsys, "keep.log", "log")
		scan("first scan")

		if r := scan("unchanged"); len(r.Changes) != 0 || idx.ranges != 0 {
			t.Fatalf("unchanged: changes %q and %d passes over the index, want none", changes(r), idx.ranges)
		}

		if err := fsys.Remove("d/e/c.txt"); err != nil {
			t.Fatal(err)
		}
		if r := scan("a file gone"); changes(r) != "deleted d/e/c.txt\n" || idx.ranges != 1 {
			t.Fatalf("a file gone: %q and %d passes, want the deletion of d/e/c.txt from one pass", changes(r), idx.ranges)
		}

		// A record removed from the index while the walk runs (as an
		// apply would), with a.txt gone from disk: the scan sees as many
		// indexed paths as the index holds at its end, but not the same
		// ones, so it must look.
		if err := fsys.Remove("a.txt"); err != nil {
			t.Fatal(err)
		}
		put(t, fsys, "new.txt", "new")
		hasher.path, hasher.hook = "new.txt", func() { idx.remove("keep.log") }
		if r := scan("the index changed meanwhile"); changes(r) != "deleted a.txt\nadded new.txt\n" {
			t.Fatalf("the index changed meanwhile: %q, want the deletion of a.txt and new.txt added", changes(r))
		}

		// A record ignored now: not deleted, and not counted as seen.
		put(t, fsys, ".weftignore", "*.log\n")
		idx.mu.Lock()
		idx.m.Put(Record{Path: "old.log", Kind: KindFile, Size: 1})
		idx.changes++
		idx.mu.Unlock()
		if r := scan("a record ignored now"); changes(r) != "added .weftignore\n" || idx.ranges != 1 {
			t.Fatalf("a record ignored now: %q and %d passes, want only .weftignore added, from one pass", changes(r), idx.ranges)
		}

		// Some paths only: always the pass over their subtrees.
		if err := fsys.Remove("d/b.txt"); err != nil {
			t.Fatal(err)
		}
		if r := scan("some paths", "d"); changes(r) != "deleted d/b.txt\n" || idx.ranges != 1 {
			t.Fatalf("some paths: %q and %d passes, want the deletion of d/b.txt from one pass", changes(r), idx.ranges)
		}
	})
}
