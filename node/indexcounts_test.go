package node

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// walkCounts is what view computed before indexCounts: a walk of every
// record. The tests hold the kept counts to it.
func walkCounts(v *vault) (files, dirs int, bytes int64, conflicts []string) {
	for p, r := range v.index {
		switch r.Kind {
		case entry.KindFile:
			files++
			bytes += int64(r.Size)
			if isConflictCopy(p) {
				conflicts = append(conflicts, p)
			}
		case entry.KindDir:
			dirs++
		}
	}
	slices.Sort(conflicts)
	return
}

func newCountsVault() *vault {
	return &vault{
		index:    map[string]vaultdb.Record{},
		children: map[string]map[string]struct{}{},
		chunks:   newFolderChunks(nil, crypt{}),
		eng:      engine.New(engine.Config{}),
	}
}

// checkCounts compares view's counters with a walk of the index.
func checkCounts(t interface {
	Helper()
	Fatalf(string, ...any)
}, v *vault, step string) {
	t.Helper()
	files, dirs, bytes, conflicts := walkCounts(v)
	got := v.view()
	if got.files != files || got.dirs != dirs || got.bytes != bytes {
		t.Fatalf("%s: got files %d dirs %d bytes %d, want %d %d %d (a walk)", step, got.files, got.dirs, got.bytes, files, dirs, bytes)
	}
	if !slices.Equal(got.conflicts, conflicts) {
		t.Fatalf("%s: got conflicts %q, want %q (a walk)", step, got.conflicts, conflicts)
	}
}

func TestIndexCountsTable(t *testing.T) {
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
	v := newCountsVault()
	for _, s := range steps {
		v.mu.Lock()
		v.setIndexLocked(s.path, s.rec)
		v.mu.Unlock()
		checkCounts(t, v, s.name)
	}
	got := v.view()
	if got.files != 1 || got.dirs != 2 || got.bytes != 0 || !slices.Equal(got.conflicts, []string{cc}) {
		t.Errorf("at the end: got files %d dirs %d bytes %d conflicts %q, want 1 2 0 [%q]", got.files, got.dirs, got.bytes, got.conflicts, cc)
	}
}

// TestIndexCountsProperty: after any sequence of index changes (adds,
// replacements, kind changes, deletes, conflict copies), the kept counts
// equal a walk of the index.
func TestIndexCountsProperty(t *testing.T) {
	paths := []string{"a", "a/b.txt", "a/c", "a/c/d.bin", "a/b.conflict-20261130-0001.txt", "e.conflict-x", "f.txt"}
	kinds := []entry.Kind{0, entry.KindFile, entry.KindDir, entry.KindSymlink, entry.KindFile}
	rapid.Check(t, func(t *rapid.T) {
		v := newCountsVault()
		n := rapid.IntRange(0, 60).Draw(t, "n")
		for i := 0; i < n; i++ {
			p := rapid.SampledFrom(paths).Draw(t, "path")
			k := rapid.SampledFrom(kinds).Draw(t, "kind")
			rec := vaultdb.Record{Kind: k}
			if k == entry.KindFile || k == entry.KindSymlink {
				rec.Size = rapid.Uint64Range(0, 1<<40).Draw(t, "size")
			}
			v.mu.Lock()
			v.setIndexLocked(p, rec)
			v.mu.Unlock()
			checkCounts(t, v, "step")
		}
	})
}
