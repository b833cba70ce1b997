package engine

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

// TestTrimRecentApplies: Trim forgets the applies past ApplyRaceWindow and
// lets go of the map once none is left; an apply still in its window is
// kept and still answers a racing save.
func TestTrimRecentApplies(t *testing.T) {
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	t0 := time.Unix(1_800_000_000, 0)
	before := Disk{Version: id(a, 1), Kind: protocol.KindFile, ContentHash: [32]byte{1}}
	peer := Disk{Version: id(b, 1), Kind: protocol.KindFile, ContentHash: [32]byte{2}}
	edit := Disk{Kind: protocol.KindFile, ContentHash: [32]byte{3}}
	sup := func() []protocol.VersionID { return []protocol.VersionID{id(a, 1)} }

	var r RecentApplies
	for i := range 3000 {
		r.Applied(name(i), before, true, peer, t0, sup)
	}
	late := t0.Add(ApplyRaceWindow - time.Second)
	for i := 3000; i < 3010; i++ {
		r.Applied(name(i), before, true, peer, late, sup)
	}
	r.Trim(t0.Add(ApplyRaceWindow - time.Millisecond))
	if got := r.Len(); got != 3010 {
		t.Fatalf("after a trim within the window: got %d applies, want 3010", got)
	}
	r.Trim(t0.Add(ApplyRaceWindow))
	if got := r.Len(); got != 10 {
		t.Fatalf("after a trim past the first applies' window: got %d applies, want 10", got)
	}
	if _, raced := r.ForLocalChange(name(3000), peer, true, edit, late.Add(time.Second)); !raced {
		t.Fatal("an apply kept by the trim did not answer a save within its window")
	}
	r.Trim(late.Add(ApplyRaceWindow))
	if r.Len() != 0 || r.m != nil {
		t.Fatalf("after every window ended: %d applies, map nil %v; want 0 and nil", r.Len(), r.m == nil)
	}
}

// TestTrimDeleteGuard: Trim forgets the move hashes past DeleteWindow,
// recorded here and arrived, and lets go of the sets once they are empty.
func TestTrimDeleteGuard(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	f := newGuardFolder(0)
	var g DeleteGuard
	var changes []LocalChange
	arriving := map[[32]byte]string{}
	for i := range 5000 {
		changes = append(changes, LocalChange{Path: name(i), Kind: protocol.KindFile, Hash: hashOf(i)})
		arriving[hashOf(i+5000)] = name(i + 5000)
	}
	g.JudgeLocal(changes, ScanSettled, nil, f, t0)
	g.JudgeIncoming(nil, arriving, f, t0)
	if added, arrived := g.MoveHashes(); added != 5000 || arrived != 5000 {
		t.Fatalf("precondition: got %d added and %d arrived hashes, want 5000 each", added, arrived)
	}
	g.Trim(t0.Add(DeleteWindow - time.Millisecond))
	if added, arrived := g.MoveHashes(); added != 5000 || arrived != 5000 {
		t.Fatalf("after a trim within the window: got %d added and %d arrived hashes, want 5000 each", added, arrived)
	}
	g.Trim(t0.Add(DeleteWindow))
	if added, arrived := g.MoveHashes(); added != 0 || arrived != 0 || g.added != nil || g.arrived != nil {
		t.Fatalf("after a trim past the window: got %d added and %d arrived hashes (sets nil %v %v), want none and nil",
			added, arrived, g.added == nil, g.arrived == nil)
	}
}
