package folder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"lukechampine.com/blake3"
)

func TestScanDetectsChanges(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		s := newScanner(t, fsys, idx)
		put(t, fsys, "a.txt", "alpha")
		put(t, fsys, "d/b.txt", "beta")
		put(t, fsys, "d/e/c.txt", "gamma")
		if err := fsys.Symlink("../a.txt", "d/link"); err != nil {
			t.Fatal(err)
		}
		mkdirs(t, fsys, WorkDir+"/db")
		put(t, fsys, WorkDir+"/db/x", "internal")
		put(t, fsys, "d/"+TempPrefix+"123", "partial")

		r := scanInto(t, s, idx)
		want := "added a.txt\nadded d\nadded d/b.txt\nadded d/e\nadded d/e/c.txt\nadded d/link\n"
		if got := changes(r); got != want {
			t.Fatalf("first scan:\n%s\nwant:\n%s", got, want)
		}
		if h := blake3.Sum256([]byte("alpha")); idx["a.txt"].Hash != h {
			t.Errorf("a.txt hash = %x, want %x", idx["a.txt"].Hash, h)
		}
		if got := idx["d/link"].Target; got != "../a.txt" {
			t.Errorf("link target = %q, want ../a.txt", got)
		}
		if r.Files != 4 || r.Dirs != 2 || r.Bytes != 14 {
			t.Errorf("counts = %d files %d dirs %d bytes, want 4 2 14", r.Files, r.Dirs, r.Bytes)
		}

		// Unchanged: nothing reported.
		if r := scanInto(t, s, idx); len(r.Changes) != 0 {
			t.Fatalf("rescan: %s", changes(r))
		}

		appendTo(t, fsys, "a.txt", "!")                        // same inode, new size
		put(t, fsys, "d/b.txt", "beto")                        // same size, new inode
		if err := fsys.Chmod("d/e/c.txt", 0o755); err != nil { // mode only
			t.Fatal(err)
		}
		if err := fsys.Remove("d/link"); err != nil {
			t.Fatal(err)
		}
		mkdirs(t, fsys, "d/link") // symlink -> dir
		r = scanInto(t, s, idx)
		want = "modified a.txt\nmodified d/b.txt\nmodified d/e/c.txt\nkind-changed d/link\n"
		if got := changes(r); got != want {
			t.Fatalf("after edits:\n%s\nwant:\n%s", got, want)
		}
		if r.Changes[2].New.Hash != r.Changes[2].Old.Hash {
			t.Errorf("chmod changed the hash")
		}

		put(t, fsys, "d/e/c.txt", "gamma2")
		for _, p := range []string{"d/e/c.txt", "d/e"} {
			if err := fsys.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		r = scanInto(t, s, idx)
		if got, want := changes(r), "deleted d/e\ndeleted d/e/c.txt\n"; got != want {
			t.Fatalf("after delete:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestScanIgnoreRules(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		s := newScanner(t, fsys, idx)
		put(t, fsys, "keep.txt", "k")
		put(t, fsys, "x.log", "l")
		put(t, fsys, "build/out.bin", "o")
		put(t, fsys, "src/build", "a file named build")
		put(t, fsys, "important.log", "i")
		put(t, fsys, IgnoreFile, "# comment\n*.log\n!important.log\nbuild/\n")
		r := scanInto(t, s, idx)
		want := "added .weftignore\nadded important.log\nadded keep.txt\nadded src\nadded src/build\n"
		if got := changes(r); got != want {
			t.Fatalf("with rules:\n%s\nwant:\n%s", got, want)
		}
		// The rules change: *.log no longer ignored, keep.txt now is. An
		// indexed path that becomes ignored is not reported deleted.
		put(t, fsys, IgnoreFile, "keep.txt\nbuild/\n")
		r = scanInto(t, s, idx)
		want = "modified .weftignore\nadded x.log\n"
		if got := changes(r); got != want {
			t.Fatalf("after rule change:\n%s\nwant:\n%s", got, want)
		}
		if s.Ignore().Len() != 2 {
			t.Errorf("rules = %d, want 2", s.Ignore().Len())
		}
	})
}

// mutatingHasher appends to the file it is hashing, once, as a writer that
// is still busy would.
type mutatingHasher struct {
	t    *testing.T
	fsys FS
	once sync.Once
}

func (m *mutatingHasher) Hash(ctx context.Context, p string, r io.Reader, size int64) (HashResult, error) {
	if p == "busy.txt" {
		m.once.Do(func() { appendTo(m.t, m.fsys, p, "more") })
	}
	return BLAKE3Hasher{}.Hash(ctx, p, r, size)
}

func TestScanUnsettled(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		put(t, fsys, "busy.txt", "first")
		put(t, fsys, "calm.txt", "calm")
		s, err := NewScanner(ScannerConfig{FS: fsys, Index: idx, Hasher: &mutatingHasher{t: t, fsys: fsys}})
		if err != nil {
			t.Fatal(err)
		}
		r := scanInto(t, s, idx)
		if got, want := changes(r), "added calm.txt\n"; got != want {
			t.Errorf("changes:\n%s\nwant:\n%s", got, want)
		}
		if !slices.Equal(r.Unsettled, []string{"busy.txt"}) {
			t.Errorf("unsettled = %q, want [busy.txt]", r.Unsettled)
		}
		// Next round it is quiet and gets its full content.
		r = scanInto(t, s, idx)
		if h := blake3.Sum256([]byte("firstmore")); len(r.Changes) != 1 || r.Changes[0].New.Hash != h {
			t.Errorf("second scan = %+v, want busy.txt with the hash of firstmore", r.Changes)
		}
	})
}

func TestScanPaths(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		s := newScanner(t, fsys, idx)
		put(t, fsys, "a/1", "1")
		put(t, fsys, "a/2", "2")
		put(t, fsys, "b/3", "3")
		scanInto(t, s, idx)
		fsys.Remove("a/1")
		fsys.Remove("a/2")
		fsys.Remove("a")
		appendTo(t, fsys, "b/3", "x")
		r, err := s.ScanPaths(context.Background(), []string{"a", "a/1"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := changes(r), "deleted a\ndeleted a/1\ndeleted a/2\n"; got != want {
			t.Errorf("ScanPaths(a):\n%s\nwant:\n%s", got, want)
		}
		r, _ = s.ScanPaths(context.Background(), []string{"b/3", "nothing/here"})
		if got, want := changes(r), "modified b/3\n"; got != want {
			t.Errorf("ScanPaths(b/3):\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestScanNames(t *testing.T) {
	nfd, nfc := "cafe\u0301.txt", "caf\u00e9.txt"
	t.Run("plain FS skips non-NFC names", func(t *testing.T) {
		m := NewMemFS(MemFSConfig{})
		put(t, m, nfd, "x")
		r := scanInto(t, newScanner(t, m, MapIndex{}), MapIndex{})
		if len(r.Changes) != 0 || len(r.Skipped) != 1 || !errors.Is(r.Skipped[0].Err, ErrNotNFC) {
			t.Errorf("result = %+v, want one ErrNotNFC skip", r)
		}
	})
	t.Run("normalising FS reports NFC", func(t *testing.T) {
		m := NewMemFS(MemFSConfig{Folding: Folding{NormInsensitive: true}})
		put(t, m, nfd, "x")
		s, _ := NewScanner(ScannerConfig{FS: m, Index: MapIndex{}, Folding: m.Folding()})
		idx := MapIndex{}
		s.cfg.Index = idx
		r := scanInto(t, s, idx)
		if got, want := changes(r), "added "+nfc+"\n"; got != want {
			t.Errorf("changes %q, want %q", got, want)
		}
		if r := scanInto(t, s, idx); len(r.Changes) != 0 {
			t.Errorf("rescan: %s", changes(r))
		}
	})
	t.Run("case-insensitive FS", func(t *testing.T) {
		m := NewMemFS(MemFSConfig{Folding: Folding{CaseInsensitive: true}})
		idx := MapIndex{}
		s, _ := NewScanner(ScannerConfig{FS: m, Index: idx, Folding: m.Folding()})
		put(t, m, "Readme.md", "r")
		scanInto(t, s, idx)
		// A local case-only rename: the old name is deleted, the new added.
		if err := m.Rename("Readme.md", "README.md"); err != nil {
			t.Fatal(err)
		}
		r := scanInto(t, s, idx)
		if got, want := changes(r), "added README.md\ndeleted Readme.md\n"; got != want {
			t.Errorf("case rename:\n%s\nwant:\n%s", got, want)
		}
		// Two live records, one name on disk: the absent one is shadowed,
		// not deleted.
		idx.Put(Record{Path: "readme.md", Kind: KindFile})
		r = scanInto(t, s, idx)
		if len(r.Changes) != 0 || !slices.Equal(r.Shadowed, []string{"readme.md"}) {
			t.Errorf("changes %q shadowed %q, want none and [readme.md]", changes(r), r.Shadowed)
		}
	})
	t.Run("case-insensitive FS, one path asked", func(t *testing.T) {
		// Scanning a path that Lstat finds under another stored name
		// looks at the stored name (MemFS's Lstat, like the operating
		// system's, reports the name asked): never a version of the path asked
		// (an apply's check of README.md while readme.md is on disk once
		// recorded a new README.md with readme.md's content: a conflict
		// copy instead of a collision name).
		m := NewMemFS(MemFSConfig{Folding: Folding{CaseInsensitive: true}})
		idx := MapIndex{}
		s, _ := NewScanner(ScannerConfig{FS: m, Index: idx, Folding: m.Folding()})
		put(t, m, "readme.md", "lower")
		paths := func() Result {
			t.Helper()
			r, err := s.ScanPaths(context.Background(), []string{"README.md"})
			if err != nil {
				t.Fatal(err)
			}
			record(idx, r)
			return r
		}
		if r, err := s.ScanPaths(context.Background(), []string{"README.md", "readme.md"}); err != nil || changes(r) != "added readme.md\n" {
			t.Errorf("both names asked: %q, %v; want readme.md added once", changes(r), err)
		}
		if got, want := changes(paths()), "added readme.md\n"; got != want {
			t.Errorf("the stored twin not indexed yet:\n%s\nwant:\n%s", got, want)
		}
		if r := paths(); len(r.Changes) != 0 {
			t.Errorf("the stored twin indexed and unchanged: %s", changes(r))
		}
		// A live record of the name asked, whose item is stored under
		// another case now (a case-only rename made on this device).
		idx.Put(Record{Path: "README.md", Kind: KindFile})
		delete(idx, "readme.md")
		if got, want := changes(paths()), "deleted README.md\nadded readme.md\n"; got != want {
			t.Errorf("a case-only rename seen from the old name:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestScanCancel(t *testing.T) {
	m := NewMemFS(MemFSConfig{})
	put(t, m, "a", "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newScanner(t, m, MapIndex{}).Scan(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("scan with cancelled ctx = %v, want context.Canceled", err)
	}
}

// failingHasher fails on one path, as an unreadable disk sector would.
type failingHasher struct{}

func (failingHasher) Hash(ctx context.Context, p string, r io.Reader, size int64) (HashResult, error) {
	if p == "bad" {
		return HashResult{}, errors.New("input/output error")
	}
	return BLAKE3Hasher{}.Hash(ctx, p, r, size)
}

func TestScanHashErrorSkips(t *testing.T) {
	m := NewMemFS(MemFSConfig{})
	put(t, m, "bad", "x")
	put(t, m, "good", "y")
	idx := MapIndex{"bad": {Path: "bad", Kind: KindFile}}
	s, _ := NewScanner(ScannerConfig{FS: m, Index: idx, Hasher: failingHasher{}})
	r := scanInto(t, s, idx)
	if got, want := changes(r), "added good\n"; got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	if len(r.Skipped) != 1 || r.Skipped[0].Path != "bad" {
		t.Errorf("skipped = %+v, want [bad]", r.Skipped)
	}
}

// A scan with a spill hands new files over in whole batches as they are
// hashed and returns the rest (a short batch, directories, edits) as
// usual; every change is counted once. An error from the spill ends the
// scan with it.
func TestScanSpillsNewFiles(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		s := newScanner(t, fsys, idx)
		put(t, fsys, "old.txt", "old")
		scanInto(t, s, idx)
		put(t, fsys, "old.txt", "edited")
		for i := range 10 {
			put(t, fsys, fmt.Sprintf("d/n%d.md", i), fmt.Sprint("note ", i))
		}
		var spilled []Change
		var batches []int
		r, err := s.ScanWith(t.Context(), ScanOptions{SpillEvery: 3, Spill: func(cs []Change) error {
			batches = append(batches, len(cs))
			spilled = append(spilled, cs...)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(batches, []int{3, 3, 3}) || r.Spilled != 9 {
			t.Fatalf("spilled batches %v (Spilled %d), want three of 3", batches, r.Spilled)
		}
		for _, c := range spilled {
			if c.Type != Added || c.New.Kind != KindFile || c.Extra == nil && c.New.Hash == ([32]byte{}) {
				t.Fatalf("spilled %s %s: want new, hashed files only", c.Type, c.Path)
			}
		}
		got := changes(r)
		if r.NumChanges() != 12 || !strings.Contains(got, "added d\n") || !strings.Contains(got, "modified old.txt\n") {
			t.Fatalf("returned (%d changes in all):\n%s\nwant the directory, the edit and one new file", r.NumChanges(), got)
		}
		seen := map[string]bool{}
		for _, c := range append(spilled, r.Changes...) {
			if seen[c.Path] {
				t.Fatalf("%s reported twice", c.Path)
			}
			seen[c.Path] = true
		}

		for i := range 4 {
			put(t, fsys, fmt.Sprintf("e/n%d.md", i), "x")
		}
		boom := errors.New("home disk full")
		if _, err := s.ScanWith(t.Context(), ScanOptions{Paths: []string{"e"}, SpillEvery: 2, Spill: func([]Change) error { return boom }}); !errors.Is(err, boom) {
			t.Fatalf("a failing spill: scan error %v, want %v", err, boom)
		}
	})
}
