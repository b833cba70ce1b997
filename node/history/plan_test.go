package history

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// at builds a version of path with entry time ms and clock, superseding
// the given versions.
func at(path string, author byte, seq, clock uint64, ms int64, kind entry.Kind, hash byte, supersedes ...Version) Version {
	id := entry.VersionID{Author: keys.DeviceID{author}, Seq: seq}
	cv := protocol.Version{ID: id, Path: path, Kind: protocol.Kind(kind), Clock: clock, MTime: ms, Time: ms}
	ver := entry.Version{Path: path, Kind: kind, Mode: 0o644}
	if kind == entry.KindFile {
		cv.ContentHash, ver.Hash = [32]byte{hash}, [32]byte{hash}
	}
	for _, s := range supersedes {
		cv.Supersedes = append(cv.Supersedes, s.Core.ID)
		ver.Supersedes = append(ver.Supersedes, s.ID)
	}
	return Version{ID: id, Ver: ver, Core: cv, Time: ms}
}

// fileDisk is the index's record of a file holding v's content.
func fileDisk(v Version) engine.Disk {
	return engine.Disk{Version: v.ID, Kind: entry.KindFile, ContentHash: v.Ver.Hash, Mode: v.Ver.Mode}
}

// noTimes fails a test that reads entry times it should not need.
func noTimes(t *testing.T) *Times {
	return NewTimes(func(a keys.DeviceID, seq uint64) (int64, error) {
		t.Errorf("read the time of %s/%d", a.Short(), seq)
		return 0, errors.New("no log")
	})
}

// logTimes answers entry times from the versions themselves, counting
// reads.
func logTimes(reads *int, vs ...Version) *Times {
	byEntry := map[entryRef]int64{}
	for _, v := range vs {
		byEntry[entryRef{v.ID.Author, v.ID.Seq}] = v.Time
	}
	return NewTimes(func(a keys.DeviceID, seq uint64) (int64, error) {
		*reads++
		ms, ok := byEntry[entryRef{a, seq}]
		if !ok {
			return 0, errors.New("no such entry")
		}
		return ms, nil
	})
}

// untimed strips times, as the vault gathers versions.
func untimed(vs ...Version) []Version {
	out := slices.Clone(vs)
	for i := range out {
		out[i].Time = 0
	}
	return out
}

func TestPlanOne(t *testing.T) {
	v1 := at("f", 1, 1, 1, 100, entry.KindFile, 1)
	v2 := at("f", 1, 2, 2, 200, entry.KindFile, 2, v1)
	del := at("f", 1, 3, 3, 300, entry.KindDeletion, 0, v2)
	all := []Version{v1, v2, del}

	t.Run("by id to an older version", func(t *testing.T) {
		items, err := PlanOne(Path{Path: "f", Versions: untimed(all...)}, IDString(v1.ID), 0, noTimes(t))
		if err != nil || len(items) != 1 || items[0].From == nil || items[0].From.ID != v1.ID {
			t.Fatalf("got %+v, %v; want f back to %v", items, err, v1.ID)
		}
	})
	t.Run("by id to what the disk holds: nothing to do", func(t *testing.T) {
		p := Path{Path: "f", Versions: untimed(v1, v2), Disk: fileDisk(v2), Indexed: true}
		items, err := PlanOne(p, IDString(v2.ID), 0, noTimes(t))
		if err != nil || len(items) != 0 {
			t.Fatalf("got %+v, %v; want an empty plan", items, err)
		}
	})
	t.Run("by id to a deletion deletes", func(t *testing.T) {
		p := Path{Path: "f", Versions: untimed(all...), Disk: fileDisk(v2), Indexed: true}
		items, err := PlanOne(p, IDString(del.ID), 0, noTimes(t))
		if err != nil || len(items) != 1 || items[0].From != nil || items[0].Change("/x").Action != "delete" {
			t.Fatalf("got %+v, %v; want a deletion of f", items, err)
		}
	})
	t.Run("by time reads each entry once", func(t *testing.T) {
		reads := 0
		items, err := PlanOne(Path{Path: "f", Versions: untimed(all...)}, "", 250, logTimes(&reads, all...))
		if err != nil || len(items) != 1 || items[0].From == nil || items[0].From.ID != v2.ID {
			t.Fatalf("got %+v, %v; want f back to %v", items, err, v2.ID)
		}
		if reads != 3 {
			t.Fatalf("%d entry reads, want 3 (one per entry)", reads)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		if _, err := PlanOne(Path{Path: "g"}, "", 250, noTimes(t)); !errors.Is(err, ErrNoHistory) {
			t.Fatalf("got %v, want ErrNoHistory", err)
		}
	})
	t.Run("unknown version", func(t *testing.T) {
		_, err := PlanOne(Path{Path: "f", Versions: untimed(all...)}, "x/1/0", 0, noTimes(t))
		if !errors.Is(err, ErrNoSuchVersion) {
			t.Fatalf("got %v, want ErrNoSuchVersion", err)
		}
	})
	t.Run("a short author prefix that names two versions", func(t *testing.T) {
		// Two authors whose IDs share the short form but not the full one.
		a := at("f", 1, 1, 1, 100, entry.KindFile, 1)
		b := at("f", 1, 1, 1, 100, entry.KindFile, 2)
		b.ID.Author[31] = 9
		b.Core.ID = b.ID
		if a.ID.Author.Short() != b.ID.Author.Short() {
			t.Fatal("short IDs differ for these authors; the rule needs two that collide")
		}
		_, err := PlanOne(Path{Path: "f", Versions: []Version{a, b}}, IDString(a.ID), 0, noTimes(t))
		if !errors.Is(err, ErrBadRestore) {
			t.Fatalf("got %v, want ErrBadRestore", err)
		}
	})
	t.Run("a failing log read is an error", func(t *testing.T) {
		reads := 0
		_, err := PlanOne(Path{Path: "f", Versions: untimed(all...)}, "", 250, logTimes(&reads))
		if err == nil || !strings.Contains(err.Error(), "reading entry") {
			t.Fatalf("got %v, want the log's error", err)
		}
	})
}

func TestPlanAllOrder(t *testing.T) {
	// At t=150: dir "d" held a file "d/a"; "x" was a directory; "gone"
	// did not exist yet. Now: "d/a" is deleted (dir "d" too), "x" is a
	// file, "gone" exists, "same" is unchanged.
	d1 := at("d", 1, 1, 1, 100, entry.KindDir, 0)
	a1 := at("d/a", 1, 1, 1, 100, entry.KindFile, 1)
	x1 := at("x", 1, 1, 1, 100, entry.KindDir, 0)
	x2 := at("x", 1, 2, 2, 200, entry.KindFile, 3, x1)
	g1 := at("gone", 1, 2, 2, 200, entry.KindFile, 4)
	g1.ID.Index, g1.Core.ID.Index = 1, 1
	s1 := at("same", 1, 1, 1, 100, entry.KindFile, 5)
	aDel := at("d/a", 1, 2, 2, 200, entry.KindDeletion, 0, a1)
	aDel.ID.Index, aDel.Core.ID.Index = 2, 2
	byPath := map[string][]Version{
		"d": untimed(d1), "d/a": untimed(a1, aDel), "x": untimed(x1, x2), "gone": untimed(g1), "same": untimed(s1),
	}
	index := map[string]engine.Disk{
		"d": {Version: d1.ID, Kind: entry.KindDir}, "x": fileDisk(x2), "gone": fileDisk(g1), "same": fileDisk(s1),
	}
	reads := 0
	items, err := PlanAll(byPath, index, 150, logTimes(&reads, d1, a1, x1, x2, g1, s1, aDel))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		c := it.Change("/f")
		got = append(got, c.Action+" "+c.Path)
	}
	want := []string{"restore d/a", "restore x", "delete gone"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan %q, want %q", got, want)
	}
	if reads != 2 {
		t.Fatalf("%d entry reads, want 2 (one per distinct entry)", reads)
	}

	// Kind changes of directories come after the deletions that empty
	// them: here "x" is a directory now and was a file then, and "d/a"
	// is back on disk though it was deleted then.
	index["x"] = engine.Disk{Version: x1.ID, Kind: entry.KindDir}
	index["d/a"] = fileDisk(a1)
	byPath["x"] = untimed(x1, x2)
	items, err = PlanAll(byPath, index, 250, logTimes(&reads, d1, a1, x1, x2, g1, s1, aDel))
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, it := range items {
		got = append(got, it.Change("/f").Action+" "+it.Path)
	}
	want = []string{"delete d/a", "restore x"}
	if !slices.Equal(got, want) {
		t.Fatalf("plan at 250 %q, want %q", got, want)
	}
}

func TestHolds(t *testing.T) {
	f := at("f", 1, 1, 1, 100, entry.KindFile, 1)
	exec := f
	exec.Ver.Mode = 0o755
	link := at("l", 1, 1, 1, 100, entry.KindSymlink, 0)
	link.Ver.Target = "there"
	dir := at("d", 1, 1, 1, 100, entry.KindDir, 0)
	tests := []struct {
		name   string
		target *Version
		cur    engine.Disk
		had    bool
		want   bool
	}{
		{"nothing wanted, nothing there", nil, engine.Disk{}, false, true},
		{"nothing wanted, a file there", nil, fileDisk(f), true, false},
		{"a file wanted, nothing there", &f, engine.Disk{}, false, false},
		{"same content", &f, fileDisk(f), true, true},
		{"other content", &f, engine.Disk{Kind: entry.KindFile, ContentHash: [32]byte{9}, Mode: 0o644}, true, false},
		{"executable bit differs", &exec, fileDisk(f), true, false},
		{"a directory where a file was", &f, engine.Disk{Kind: entry.KindDir}, true, false},
		{"same link target", &link, engine.Disk{Kind: entry.KindSymlink, ContentHash: engine.SymlinkHash("there")}, true, true},
		{"other link target", &link, engine.Disk{Kind: entry.KindSymlink, ContentHash: engine.SymlinkHash("elsewhere")}, true, false},
		{"directories are alike", &dir, engine.Disk{Kind: entry.KindDir}, true, true},
	}
	for _, tt := range tests {
		if got := Holds(tt.target, tt.cur, tt.had); got != tt.want {
			t.Errorf("%s: Holds = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// where is a Where over fixed answers, counting Reach calls.
type where struct {
	folder, kept    map[cid.Cid]bool
	devices, relays bool
	reachCalls      int
}

func (w *where) InFolder(c cid.Cid) bool { return w.folder[c] }
func (w *where) Kept(c cid.Cid) bool     { return w.kept[c] }
func (w *where) Reach() (bool, bool) {
	w.reachCalls++
	return w.devices, w.relays
}

func TestContentSource(t *testing.T) {
	c1, c2 := chunk.SumCID([]byte("one")), chunk.SumCID([]byte("two"))
	ver := entry.Version{Kind: entry.KindFile, Chunks: []entry.ChunkRef{{CID: c1, Size: 3}, {CID: c2, Size: 3}}}
	tests := []struct {
		name string
		w    where
		ver  entry.Version
		want string
	}{
		{"inline", where{}, entry.Version{Kind: entry.KindFile, Inline: []byte("x")}, "inline"},
		{"every chunk in the folder", where{folder: map[cid.Cid]bool{c1: true, c2: true}}, ver, "local"},
		{"some only in the version store", where{folder: map[cid.Cid]bool{c1: true}, kept: map[cid.Cid]bool{c2: true}}, ver, "versions"},
		{"missing, a device connected", where{folder: map[cid.Cid]bool{c1: true}, devices: true, relays: true}, ver, "peers"},
		{"missing, only a relay", where{relays: true}, ver, "relay"},
		{"missing, nobody", where{}, ver, "none"},
	}
	for _, tt := range tests {
		w := tt.w
		if got := ContentSource(tt.ver, &w); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if tt.want != "peers" && tt.want != "relay" && tt.want != "none" && w.reachCalls != 0 {
			t.Errorf("%s: asked who is connected with the content at hand", tt.name)
		}
	}
}

func TestList(t *testing.T) {
	self := keys.DeviceID{1}
	v1 := at("f", 1, 1, 1, 100, entry.KindFile, 1)
	v2 := at("f", 2, 1, 2, 200, entry.KindFile, 2, v1)
	del := at("f", 1, 2, 3, 300, entry.KindDeletion, 0, v2)
	p := Path{Folder: "/x", Path: "f", Versions: []Version{v1, del, v2},
		Heads: map[entry.VersionID]bool{del.ID: true}}
	h, err := List(p, self, &where{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, state    string
		onDisk, self bool
	}
	var got []row
	for _, v := range h.Versions {
		got = append(got, row{v.ID, v.State, v.OnDisk, v.Self})
	}
	want := []row{{IDString(del.ID), "deleted", true, true}, {IDString(v2.ID), "superseded", false, false}, {IDString(v1.ID), "superseded", false, true}}
	if !slices.Equal(got, want) {
		t.Fatalf("history %+v, want %+v", got, want)
	}
	if h.Versions[1].Content != "inline" || h.Versions[0].Content != "" {
		t.Fatalf("content sources %q / %q, want inline for a file, none for a deletion", h.Versions[1].Content, h.Versions[0].Content)
	}
	if s := h.Versions[1].Supersedes; len(s) != 1 || s[0] != IDString(v1.ID) {
		t.Fatalf("v2 supersedes %q, want [%s]", s, IDString(v1.ID))
	}
	if _, err := List(Path{Path: "g"}, self, &where{}); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("an unknown path: %v, want ErrNoHistory", err)
	}
}

func TestCheckRequest(t *testing.T) {
	bad := []api.RestoreRequest{
		{Path: "f"},
		{Path: "f", Version: "x/1/0", At: "-1h"},
		{Path: "f", Version: "x/1/0", All: true},
		{All: true},
		{At: "-1h"},
	}
	for _, r := range bad {
		if err := CheckRequest(r); !errors.Is(err, ErrBadRestore) {
			t.Errorf("%+v: %v, want ErrBadRestore", r, err)
		}
	}
	for _, r := range []api.RestoreRequest{{Path: "f", Version: "x/1/0"}, {Path: "f", At: "-1h"}, {All: true, At: "-1h"}, {Path: "d", All: true, At: "-1h"}} {
		if err := CheckRequest(r); err != nil {
			t.Errorf("%+v: %v, want it accepted", r, err)
		}
	}
}

func TestFailedErr(t *testing.T) {
	it := Item{Path: "a"}
	for code, class := range map[string]error{FailSyncing: ErrNotSettled, FailChanged: ErrChangedSinceScan, FailUnavailable: ErrContentUnavailable} {
		err := FailedErr([]api.RestoreFailure{it.Failure("/x", code, "why"), {Path: "b", Code: FailChanged, Reason: "edited"}})
		if !errors.Is(err, class) || !strings.Contains(err.Error(), "2 paths") || !strings.Contains(err.Error(), "b: edited") {
			t.Errorf("%s: %v, want %v naming both paths", code, err, class)
		}
	}
}
