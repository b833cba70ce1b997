package record

import (
	"slices"
	"testing"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// fakeVault answers from an index and a fixed graph, and counts what it
// was asked.
type fakeVault struct {
	index      map[string]vaultdb.Record
	supersedes []entry.VersionID          // what every change supersedes
	holding    map[string]entry.VersionID // path -> a head holding the new content
	asked      int                        // Supersedes calls
}

func (f *fakeVault) Index(p string) (vaultdb.Record, bool) { r, ok := f.index[p]; return r, ok }
func (f *fakeVault) Supersedes(string, vaultdb.Record, bool, vaultdb.Record) []entry.VersionID {
	f.asked++
	return f.supersedes
}
func (f *fakeVault) HeadHolding(p string, _ vaultdb.Record) (entry.VersionID, bool) {
	id, ok := f.holding[p]
	return id, ok
}

var (
	v1 = protocol.VersionID{Author: keys.DeviceID{1}, Seq: 1}
	v2 = protocol.VersionID{Author: keys.DeviceID{2}, Seq: 4}
)

func file(p string, hash byte, mtime int64, content Content) folder.Change {
	return folder.Change{Type: folder.Modified, Path: p, Extra: content,
		New: folder.Record{Path: p, Kind: folder.KindFile, Size: 3, MTime: mtime, Mode: 0o644, Hash: [32]byte{hash}}}
}

// Each way a change records a version, or only an index record.
func TestVersion(t *testing.T) {
	indexed := vaultdb.Record{Version: v1, Kind: entry.KindFile, Size: 3, MTime: 1, Mode: 0o644, Hash: [32]byte{7}}
	f := &fakeVault{index: map[string]vaultdb.Record{"a.md": indexed}, supersedes: []entry.VersionID{v1},
		holding: map[string]entry.VersionID{"new.md": v2}}

	// An edit: a version superseding what the engine says, carrying its
	// inline bytes; the index record follows the disk.
	ver, rec, ok := Version(f, file("a.md", 8, 2, Content{Inline: []byte("abc")}), false)
	if !ok || ver.Kind != entry.KindFile || !slices.Equal(ver.Supersedes, []entry.VersionID{v1}) || string(ver.Inline) != "abc" ||
		rec.Hash != [32]byte{8} || rec.MTime != 2 || rec.Version != (entry.VersionID{}) {
		t.Errorf("edit: ok %v, version %+v, record %+v", ok, ver, rec)
	}
	// A touch: same content and mode, new mtime. No version; the record
	// keeps the version and takes the new mtime.
	f.asked = 0
	_, rec, ok = Version(f, file("a.md", 7, 5, Content{Inline: []byte("abc")}), false)
	if ok || rec.Version != v1 || rec.MTime != 5 || f.asked != 0 {
		t.Errorf("touch: ok %v, record %+v, supersedes asked %d times", ok, rec, f.asked)
	}
	// The same touch restated (a copy moved back onto it): a version.
	if _, _, ok := Version(f, file("a.md", 7, 5, Content{}), true); !ok {
		t.Error("a restated touch recorded no version")
	}
	// A new path whose content a head holds: adopted, no version.
	_, rec, ok = Version(f, file("new.md", 9, 1, Content{}), false)
	if ok || rec.Version != v2 {
		t.Errorf("new path a head holds: ok %v, record %+v", ok, rec)
	}
	// A deletion of a path whose head is already a deletion: nothing to
	// supersede, no version.
	f.supersedes = nil
	if _, _, ok := Version(f, folder.Change{Type: folder.Deleted, Path: "a.md"}, false); ok {
		t.Error("a deletion superseding nothing recorded a version")
	}
	f.supersedes = []entry.VersionID{v1}
	ver, rec, ok = Version(f, folder.Change{Type: folder.Deleted, Path: "a.md"}, false)
	if !ok || ver.Kind != entry.KindDeletion || rec.Kind != 0 {
		t.Errorf("deletion: ok %v, version %+v, record %+v", ok, ver, rec)
	}
	// An empty file carries no inline bytes; a symlink its target, no
	// mode.
	empty := file("e.md", 3, 1, Content{Inline: []byte{}})
	empty.New.Size = 0
	if ver, _, _ := Version(f, empty, false); ver.Inline != nil {
		t.Errorf("empty file inline %v, want nil", ver.Inline)
	}
	link := folder.Change{Type: folder.Modified, Path: "l", New: folder.Record{Path: "l", Kind: folder.KindSymlink, Target: "a.md", Mode: 0o777}}
	if ver, rec, ok := Version(f, link, false); !ok || ver.Kind != entry.KindSymlink || ver.Target != "a.md" || ver.Mode != 0 || ver.Size != 4 || rec.Target != "a.md" {
		t.Errorf("symlink: ok %v, version %+v, record %+v", ok, ver, rec)
	}
}

// A batch closes at each limit of an entry.
func TestBatchLimits(t *testing.T) {
	p := entry.PieceParams{Direct: 8, Min: 4}
	var b Batch
	small := entry.Version{Kind: entry.KindFile, Inline: []byte("x")}
	for range MaxVersionsPerEntry {
		if !b.Fits(small, p) {
			t.Fatalf("full after %d versions", len(b.Versions))
		}
		b.AddVersion(small, p)
	}
	if b.Fits(small, p) {
		t.Error("a batch took more than MaxVersionsPerEntry versions")
	}
	b = Batch{}
	b.AddVersion(entry.Version{Inline: make([]byte, MaxInlinePerEntry-1)}, p)
	if !b.Fits(entry.Version{Inline: []byte("x")}, p) || b.Fits(entry.Version{Inline: []byte("xy")}, p) {
		t.Error("the inline limit is not MaxInlinePerEntry")
	}
	b = Batch{}
	b.AddVersion(entry.Version{Chunks: make([]entry.ChunkRef, 8)}, p) // listed directly: 8 refs
	if got := ListedRefs(entry.Version{Chunks: make([]entry.ChunkRef, 400)}, p); got != 101 {
		t.Errorf("a pieced version lists %d refs, want 101", got)
	}
	b.refs = MaxRefsPerEntry - 8
	direct := entry.PieceParams{Direct: 100, Min: 4}
	if !b.Fits(entry.Version{Chunks: make([]entry.ChunkRef, 8)}, direct) || b.Fits(entry.Version{Chunks: make([]entry.ChunkRef, 9)}, direct) {
		t.Error("the reference limit is not MaxRefsPerEntry")
	}
	if (&Batch{}).Empty() != true {
		t.Error("a new batch is not empty")
	}
	b = Batch{}
	b.AddRecord("a.md", vaultdb.Record{})
	if b.Empty() {
		t.Error("a batch with only an index record is empty: it would not be committed")
	}
}

// A copy moved back onto its file is recorded as the copy's deletion, and
// the file restated, only when the disk says the copy is gone and the file
// is the copy renamed.
func TestMovedCopies(t *testing.T) {
	copyRec := vaultdb.Record{Version: v2, Kind: entry.KindFile, Hash: [32]byte{5}, Inode: 42, MTime: 9}
	index := map[string]vaultdb.Record{
		"d/a.conflict-x.md": copyRec,
		"d/a.conflict-y.md": {Kind: entry.KindFile, Hash: [32]byte{6}}, // other content
		"a.conflict-x.md":   copyRec,                                   // another directory
	}
	copies := []string{"a.conflict-x.md", "d/a.conflict-x.md", "d/a.conflict-y.md"}
	lookup := func(p string) (vaultdb.Record, bool) { r, ok := index[p]; return r, ok }
	moved := file("d/a.md", 5, 9, Content{})
	moved.New.Inode = 42
	changes := []folder.Change{moved}

	got, onto := MovedCopies(changes, copies, lookup).Confirm(changes, func(string) bool { return true })
	if len(got) != 2 || got[1].Type != folder.Deleted || got[1].Path != "d/a.conflict-x.md" || !onto["d/a.md"] || len(onto) != 1 {
		t.Errorf("moved back: changes %+v, restated %v", got, onto)
	}
	// Still on disk: no deletion, nothing restated.
	got, onto = MovedCopies(changes, copies, lookup).Confirm(changes, func(string) bool { return false })
	if len(got) != 1 || len(onto) != 0 {
		t.Errorf("copy still there: changes %+v, restated %v", got, onto)
	}
	// Gone, but the file is a save of the same content, not the copy
	// renamed (another inode): the deletion only.
	saved := moved
	saved.New.Inode = 43
	got, onto = MovedCopies([]folder.Change{saved}, copies, lookup).Confirm([]folder.Change{saved}, func(string) bool { return true })
	if len(got) != 2 || len(onto) != 0 {
		t.Errorf("a save, copy deleted: changes %+v, restated %v", got, onto)
	}
	// The scan already reported the copy's deletion: not added twice, the
	// file restated.
	both := []folder.Change{moved, {Type: folder.Deleted, Path: "d/a.conflict-x.md"}}
	got, onto = MovedCopies(both, copies, lookup).Confirm(both, func(string) bool { return true })
	if len(got) != 2 || !onto["d/a.md"] {
		t.Errorf("deletion already seen: changes %+v, restated %v", got, onto)
	}
	if got, onto := MovedCopies(changes, nil, lookup).Confirm(changes, func(string) bool { return true }); len(got) != 1 || onto != nil {
		t.Errorf("no copies: changes %+v, restated %v", got, onto)
	}
}

func TestIsConflictCopyOf(t *testing.T) {
	for _, c := range []struct {
		q, p string
		want bool
	}{
		{"notes/a.conflict-20261207-laptop.md", "notes/a.md", true},
		{"a.conflict-1.md", "notes/a.md", false},
		{"notes/ab.conflict-1.md", "notes/a.md", false},
		{"notes/a.md", "notes/a.md", false},
	} {
		if got := IsConflictCopyOf(c.q, c.p); got != c.want {
			t.Errorf("IsConflictCopyOf(%q, %q) = %v", c.q, c.p, got)
		}
	}
}
