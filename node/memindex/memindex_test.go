package memindex

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// walk is what status computed before the index kept its counts: a walk
// of every record. The tests hold the kept counts to it.
func walk(x *Index) (files, dirs int, bytes int64, conflicts []string) {
	for p, r := range x.All() {
		switch r.Kind {
		case entry.KindFile:
			files++
			bytes += int64(r.Size)
			if protocol.IsConflictCopy(p) {
				conflicts = append(conflicts, p)
			}
		case entry.KindDir:
			dirs++
		}
	}
	slices.Sort(conflicts)
	return
}

// check compares the kept counts and child sets with a walk of the
// records.
func check(t interface {
	Helper()
	Fatalf(string, ...any)
}, x *Index, step string) {
	t.Helper()
	files, dirs, bytes, conflicts := walk(x)
	if x.Files() != files || x.Dirs() != dirs || x.Bytes() != bytes {
		t.Fatalf("%s: got files %d dirs %d bytes %d, want %d %d %d (a walk)", step, x.Files(), x.Dirs(), x.Bytes(), files, dirs, bytes)
	}
	if got := x.ConflictCopies(); !slices.Equal(got, conflicts) || x.NumConflictCopies() != len(conflicts) {
		t.Fatalf("%s: got conflicts %q, want %q (a walk)", step, got, conflicts)
	}
	var sub []string
	x.Subtree("", func(p string, _ vaultdb.Record) { sub = append(sub, p) })
	slices.Sort(sub)
	if all := slices.Sorted(maps.Keys(maps.Collect(x.All()))); !slices.Equal(sub, all) {
		t.Fatalf("%s: the child sets reach %q, the records are %q", step, sub, all)
	}
}

func TestCountsTable(t *testing.T) {
	file := func(size uint64) vaultdb.Record { return vaultdb.Record{Kind: entry.KindFile, Size: size} }
	dir := vaultdb.Record{Kind: entry.KindDir}
	link := vaultdb.Record{Kind: entry.KindSymlink, Size: 9, Target: "a/b.txt"}
	gone := vaultdb.Record{}
	const cc = "a/b.conflict-20261130-abcd.txt"
	steps := []struct {
		name string
		path string
		rec  vaultdb.Record
	}{
		{"add dir", "a", dir},
		{"add file", "a/b.txt", file(10)},
		{"add conflict copy", cc, file(7)},
		{"add symlink", "l", link},
		{"grow file", "a/b.txt", file(25)},
		{"file becomes dir", "a/b.txt", dir},
		{"dir becomes file", "a/b.txt", file(3)},
		{"delete conflict copy", cc, gone},
		{"delete absent path", "nope", gone},
		{"conflict copy again, empty", cc, file(0)},
		{"conflict-named dir", "x.conflict-1", dir},
		{"delete file", "a/b.txt", gone},
		{"delete symlink", "l", gone},
	}
	x := New()
	for _, s := range steps {
		x.Set(s.path, s.rec)
		check(t, x, s.name)
	}
	if x.Files() != 1 || x.Dirs() != 2 || x.Bytes() != 0 || !slices.Equal(x.ConflictCopies(), []string{cc}) {
		t.Errorf("at the end: got files %d dirs %d bytes %d conflicts %q, want 1 2 0 [%q]", x.Files(), x.Dirs(), x.Bytes(), x.ConflictCopies(), cc)
	}
}

// TestCountsProperty: after any sequence of index changes (adds,
// replacements, kind changes, deletes, conflict copies), the kept counts
// and child sets equal a walk of the records.
func TestCountsProperty(t *testing.T) {
	paths := []string{"a", "a/b.txt", "a/c", "a/c/d.bin", "a/b.conflict-20261130-0001.txt", "e.conflict-x", "f.txt"}
	kinds := []entry.Kind{0, entry.KindFile, entry.KindDir, entry.KindSymlink, entry.KindFile}
	rapid.Check(t, func(t *rapid.T) {
		x := New()
		n := rapid.IntRange(0, 60).Draw(t, "n")
		for i := 0; i < n; i++ {
			p := rapid.SampledFrom(paths).Draw(t, "path")
			k := rapid.SampledFrom(kinds).Draw(t, "kind")
			rec := vaultdb.Record{Kind: k}
			if k == entry.KindFile || k == entry.KindSymlink {
				rec.Size = rapid.Uint64Range(0, 1<<40).Draw(t, "size")
			}
			x.Set(p, rec)
			check(t, x, "step")
		}
	})
}

// TestFirstAfterMatchesSort: the scrub slice's pick (a bounded heap over
// the index) is the first n accepted paths after the cursor in order, as
// sorting the whole index gave, and says when paths were left out.
func TestFirstAfterMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		x := New()
		for i := range r.IntN(300) {
			kind := entry.KindFile
			if r.IntN(5) == 0 {
				kind = entry.KindDir
			}
			x.Set(fmt.Sprintf("d%d/f%03d", r.IntN(4), i), vaultdb.Record{Kind: kind})
		}
		cursor := fmt.Sprintf("d%d/f%03d", r.IntN(4), r.IntN(300))
		if round%10 == 0 {
			cursor = ""
		}
		n := r.IntN(80) - 5
		keep := func(_ string, rec vaultdb.Record) bool { return rec.Kind == entry.KindFile }
		var want []string
		for p, rec := range x.All() {
			if p > cursor && keep(p, rec) {
				want = append(want, p)
			}
		}
		slices.Sort(want)
		wantMore := false
		if n > 0 && len(want) > n {
			want, wantMore = want[:n], true
		}
		got, more := x.FirstAfter(cursor, n, keep)
		if !slices.Equal(got, want) || more != wantMore {
			t.Fatalf("round %d (n %d, cursor %q): got %v more %v, want %v more %v", round, n, cursor, got, more, want, wantMore)
		}
	}
}

// TestShareChunks: a record takes a chunk list equal to its own, and only
// that; a record without chunks, or offered a reordered or shorter list,
// is left as it was, and the counts do not change.
func TestShareChunks(t *testing.T) {
	c1 := entry.ChunkRef{Size: 7}
	c2 := entry.ChunkRef{Size: 9}
	id := func(seq uint64) protocol.VersionID { return protocol.VersionID{Seq: seq} }
	x := New()
	x.Set("big", vaultdb.Record{Version: id(1), Kind: entry.KindFile, Size: 16, Chunks: []entry.ChunkRef{c1, c2}})
	x.Set("reordered", vaultdb.Record{Version: id(2), Kind: entry.KindFile, Size: 16, Chunks: []entry.ChunkRef{c1, c2}})
	x.Set("shorter", vaultdb.Record{Version: id(3), Kind: entry.KindFile, Size: 16, Chunks: []entry.ChunkRef{c1, c2}})
	x.Set("small", vaultdb.Record{Version: id(4), Kind: entry.KindFile, Size: 3})
	graphs := map[protocol.VersionID][]entry.ChunkRef{
		id(1): {c1, c2},
		id(2): {c2, c1},
		id(3): {c1},
		id(4): {c1},
	}
	if n := x.ShareChunks(func(r vaultdb.Record) []entry.ChunkRef { return graphs[r.Version] }); n != 1 {
		t.Fatalf("%d records took the graph's list, want 1", n)
	}
	if got := x.Rec("big").Chunks; &got[0] != &graphs[id(1)][0] {
		t.Fatal("the record kept its own chunk list")
	}
	for _, p := range []string{"reordered", "shorter"} {
		if got := x.Rec(p).Chunks; &got[0] == &graphs[x.Rec(p).Version][0] || len(got) != 2 {
			t.Errorf("%s took a list unlike its own: %v", p, got)
		}
	}
	if got := x.Rec("small").Chunks; got != nil {
		t.Errorf("small took a chunk list: %v", got)
	}
	if files, _, bytes, _ := walk(x); files != 4 || bytes != 51 || x.Files() != 4 || x.Bytes() != 51 {
		t.Fatalf("counts changed: %d files, %d bytes", x.Files(), x.Bytes())
	}
}

// TestChangesCountsEverySet: every Set, of a new path, over a record, or
// removing one, moves Changes; reads do not.
func TestChangesCountsEverySet(t *testing.T) {
	x := New()
	file := vaultdb.Record{Kind: entry.KindFile, Size: 1}
	steps := []struct {
		name string
		do   func()
	}{
		{"add", func() { x.Set("a", file) }},
		{"replace", func() { x.Set("a", vaultdb.Record{Kind: entry.KindFile, Size: 2}) }},
		{"remove", func() { x.Set("a", vaultdb.Record{}) }},
		{"remove what is not there", func() { x.Set("b", vaultdb.Record{}) }},
	}
	for _, s := range steps {
		before := x.Changes()
		s.do()
		if x.Changes() == before {
			t.Errorf("%s: Changes stayed %d", s.name, before)
		}
		n := x.Changes()
		x.Get("a")
		x.Subtree("", func(string, vaultdb.Record) {})
		if x.Changes() != n {
			t.Errorf("after reads: got %d, want %d", x.Changes(), n)
		}
	}
}
