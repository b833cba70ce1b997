package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

var (
	devA = keys.DeviceID{1}
	devB = keys.DeviceID{2}
)

func id(d keys.DeviceID, seq uint64) protocol.VersionID {
	return protocol.VersionID{Author: d, Seq: seq}
}

func file(i protocol.VersionID, path string, content byte, clock uint64, sup ...protocol.VersionID) protocol.Version {
	return protocol.Version{ID: i, Path: path, Kind: protocol.KindFile, ContentHash: [32]byte{content}, Clock: clock, Time: int64(clock), Supersedes: sup}
}

func del(i protocol.VersionID, path string, clock uint64, sup ...protocol.VersionID) protocol.Version {
	return protocol.Version{ID: i, Path: path, Kind: protocol.KindDeletion, Clock: clock, Time: int64(clock), Supersedes: sup}
}

func graph(t *testing.T, vs ...protocol.Version) *protocol.Graph {
	t.Helper()
	g := protocol.NewGraph()
	for _, v := range vs {
		if err := g.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func onDisk(v protocol.Version) Disk {
	return Disk{Version: v.ID, Kind: v.Kind, ContentHash: v.ContentHash, Mode: v.Mode}
}

func TestLocalSupersedesOnlyWhatIsOnDisk(t *testing.T) {
	base := file(id(devA, 1), "f", 1, 1)
	mine := file(id(devA, 2), "f", 2, 2, base.ID)
	theirs := file(id(devB, 1), "f", 3, 2, base.ID) // arrived, not applied
	g := graph(t, base, mine, theirs)
	got := LocalSupersedes(g, "f", onDisk(mine), true)
	if want := []protocol.VersionID{mine.ID}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want only the applied head %v: a head not on disk must stay concurrent", got, want)
	}
}

func TestLocalSupersedesIdenticalHeads(t *testing.T) {
	base := file(id(devA, 1), "f", 1, 1)
	a := file(id(devA, 2), "f", 2, 2, base.ID)
	b := file(id(devB, 1), "f", 2, 2, base.ID) // same content, another device
	g := graph(t, base, a, b)
	got := LocalSupersedes(g, "f", onDisk(a), true)
	if want := []protocol.VersionID{a.ID, b.ID}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want both identical heads %v", got, want)
	}
}

func TestLocalSupersedesDeletionWhenNothingRecorded(t *testing.T) {
	f := file(id(devA, 1), "f", 1, 1)
	d := del(id(devB, 1), "f", 2, f.ID)
	g := graph(t, f, d)
	got := LocalSupersedes(g, "f", Disk{}, false)
	if want := []protocol.VersionID{d.ID}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want the deletion head %v (finding 8)", got, want)
	}
	// With something recorded there, a deletion head is not superseded
	// unless the disk holds it.
	if got := LocalSupersedes(g, "f", onDisk(f), true); !slices.Equal(got, []protocol.VersionID{f.ID}) {
		t.Fatalf("got %v, want the recorded version only", got)
	}
}

func TestHeadHoldingAdoptsOnlyAMatchingHead(t *testing.T) {
	old := file(id(devA, 1), "f", 1, 1)
	head := file(id(devA, 2), "f", 2, 2, old.ID)
	head.Mode = 0o755
	g := graph(t, old, head)
	d := onDisk(head)
	d.Version = protocol.VersionID{}
	if got, ok := HeadHolding(g, "f", d); !ok || got != head.ID {
		t.Fatalf("got %v %v, want the head %v", got, ok, head.ID)
	}
	d.Mode = 0o644
	if _, ok := HeadHolding(g, "f", d); ok {
		t.Fatal("adopted a head whose executable bits differ from the disk")
	}
	if _, ok := HeadHolding(g, "f", Disk{Kind: protocol.KindFile, ContentHash: old.ContentHash}); ok {
		t.Fatal("adopted a version that is no longer a head")
	}
}

func TestCopySupersedesIndexAndHeads(t *testing.T) {
	x := file(id(devA, 1), "c", 1, 1)
	d := del(id(devB, 1), "c", 2, x.ID)
	g := graph(t, x, d)
	got := CopySupersedes(g, "c", onDisk(x), true)
	if want := []protocol.VersionID{x.ID, d.ID}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := CopySupersedes(g, "nothing-here", Disk{}, false); len(got) != 0 {
		t.Fatalf("got %v for an empty name, want nothing", got)
	}
}

func TestOrder(t *testing.T) {
	fold := func(s string) string {
		out := []byte(s)
		for i, c := range out {
			if c >= 'A' && c <= 'Z' {
				out[i] = c + 'a' - 'A'
			}
		}
		return string(out)
	}
	a := file(id(devA, 1), "d/a", 1, 1)
	g := graph(t,
		file(id(devA, 2), "d", 0, 1), a,
		del(id(devA, 3), "old", 2), del(id(devA, 4), "old/x", 2), del(id(devA, 5), "readme", 2),
		file(id(devA, 6), "README", 3, 3), del(id(devA, 7), "held", 2),
	)
	paths := []string{"old", "d/a", "README", "old/x", "d", "readme", "held"}
	dels := Deletions(g, paths)
	if want := []string{"held", "old", "old/x", "readme"}; !slices.Equal(dels, want) {
		t.Fatalf("deletions %v, want %v", dels, want)
	}
	plan := Order(paths, dels, []string{"old", "old/x", "readme"}, fold)
	if want := []string{"d", "d/a"}; !slices.Equal(plan.Adds, want) {
		t.Errorf("adds %v, want parents first %v", plan.Adds, want)
	}
	if want := []string{"readme", "old/x", "old"}; !slices.Equal(plan.Deletions, want) {
		t.Errorf("deletions %v, want children first %v", plan.Deletions, want)
	}
	if want := []string{"README"}; !slices.Equal(plan.AfterDeletions, want) {
		t.Errorf("after deletions %v, want the name a deletion frees %v", plan.AfterDeletions, want)
	}
	for _, p := range slices.Concat(plan.Adds, plan.Deletions, plan.AfterDeletions) {
		if p == "held" {
			t.Errorf("the held deletion is in the plan: %+v", plan)
		}
	}
}

func TestArrivingSkipsDeletions(t *testing.T) {
	g := graph(t, file(id(devA, 1), "new", 7, 1), del(id(devA, 2), "gone", 1))
	got := Arriving(g, []string{"new", "gone"})
	if len(got) != 1 || got[[32]byte{7}] != "new" {
		t.Fatalf("got %v, want only the file's content", got)
	}
}

func TestAwaitsHistory(t *testing.T) {
	a := file(id(devA, 2), "f", 1, 3, id(devA, 1)) // parent not here
	b := file(id(devB, 1), "f", 2, 2)
	g := graph(t, a, b)
	if !AwaitsHistory(g, "f") {
		t.Fatal("two heads, one of them dangling: want a wait")
	}
	if AwaitsHistory(graph(t, a), "f") {
		t.Fatal("a single head never waits")
	}
	t0 := time.Unix(1000, 0)
	if WaitOver(t0, t0.Add(DanglingWait-time.Millisecond)) {
		t.Fatal("wait over before DanglingWait")
	}
	if !WaitOver(t0, t0.Add(DanglingWait)) {
		t.Fatal("wait not over at DanglingWait")
	}
	if WaitOver(t0, t0.Add(-time.Hour)) {
		t.Fatal("a clock that went back ended the wait")
	}
}

func TestRulesDefault(t *testing.T) {
	g := graph(t, file(id(devA, 1), "f", 1, 1), file(id(devB, 1), "f", 2, 2))
	var zero Rules
	dec, err := zero.OrDefault().Resolve(g, "f", Disk{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := g.Resolve("f", nil)
	if dec.Winner.ID != want.Winner.ID || dec.Outcome != want.Outcome || len(dec.Copies) != len(want.Copies) {
		t.Fatalf("zero rules decided %+v, want protocol's %+v", dec, want)
	}
}

func TestResolution(t *testing.T) {
	a := file(id(devA, 1), "f", 1, 1)
	b := file(id(devB, 1), "f", 2, 2)
	gone := del(id(devA, 2), "f.conflict-x", 1) // a deletion at the copy's name
	g := graph(t, a, b, gone)
	dec, err := g.Resolve("f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !RecordsResolution(dec) || WritesWinnerOnly(dec) {
		t.Fatalf("a conflict: RecordsResolution %v, WritesWinnerOnly %v", RecordsResolution(dec), WritesWinnerOnly(dec))
	}
	winner := entry.Version{Path: "f", Kind: entry.KindFile, Hash: dec.Winner.ContentHash}
	loser := entry.Version{Path: "f.conflict-x", Kind: entry.KindFile, Hash: [32]byte{9}}
	vs := Resolution(g, dec, winner, []NewCopy{{Body: loser}})
	if len(vs) != 2 {
		t.Fatalf("got %d versions, want the resolution and one copy", len(vs))
	}
	if vs[0].Path != "f" || !slices.Equal(vs[0].Supersedes, dec.Superseded) {
		t.Errorf("resolution %+v, want f superseding every head %v", vs[0], dec.Superseded)
	}
	if want := []protocol.VersionID{gone.ID}; !slices.Equal(vs[1].Supersedes, want) {
		t.Errorf("copy supersedes %v, want the deletion at its name %v", vs[1].Supersedes, want)
	}

	single := graph(t, a)
	dec, err = single.Resolve("f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if RecordsResolution(dec) || !WritesWinnerOnly(dec) || Resolution(single, dec, winner, nil) != nil {
		t.Fatal("a single head must record nothing and write only the winner")
	}
}

func TestSameContentHead(t *testing.T) {
	a := file(id(devA, 1), "c", 1, 1)
	b := file(id(devB, 1), "c", 1, 1)
	g := graph(t, a, b)
	if got, ok := SameContentHead(g, "c", a); !ok || got != a.ID {
		t.Fatalf("got %v %v, want the first head in canonical order %v", got, ok, a.ID)
	}
	if _, ok := SameContentHead(g, "c", file(id(devA, 9), "c", 2, 1)); ok {
		t.Fatal("found a head for content nobody holds")
	}
}
