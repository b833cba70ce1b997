package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

// TestRecentApplies: a local change within ApplyRaceWindow of an apply
// that replaced content supersedes what was on disk before it; not after
// the window, not for a file the apply created, not for a change back to
// the content before, not once answered; an index-only change keeping the
// content carries the apply along, and a deletion forgets it.
func TestRecentApplies(t *testing.T) {
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	t0 := time.Unix(1_800_000_000, 0)
	disk := func(v protocol.VersionID, content byte) Disk {
		return Disk{Version: v, Kind: protocol.KindFile, ContentHash: [32]byte{content}}
	}
	before, peer := disk(id(a, 1), 1), disk(id(b, 1), 2)
	edit := disk(protocol.VersionID{}, 3)
	sup := []protocol.VersionID{id(a, 1)}
	calls := 0
	supersedes := func() []protocol.VersionID { calls++; return sup }

	var r RecentApplies
	r.Applied("n.md", before, true, peer, t0, supersedes)
	got, raced := r.ForLocalChange("n.md", peer, true, edit, t0.Add(time.Second))
	if !raced || !slices.Equal(got, sup) || calls != 1 {
		t.Fatalf("a save a second after the apply: %v %v (supersedes asked %d times); want the pre-apply heads", got, raced, calls)
	}
	if _, raced := r.ForLocalChange("n.md", peer, true, edit, t0.Add(time.Second)); raced {
		t.Fatal("one apply answered two changes")
	}

	for _, tt := range []struct {
		name    string
		had     bool
		changed Disk
		at      time.Duration
	}{
		{"after the window", true, edit, ApplyRaceWindow},
		{"a file the apply created", false, edit, time.Second},
		{"back to the content before", true, disk(protocol.VersionID{}, 1), time.Second},
	} {
		var r RecentApplies
		r.Applied("n.md", before, tt.had, peer, t0, supersedes)
		if _, raced := r.ForLocalChange("n.md", peer, true, tt.changed, t0.Add(tt.at)); raced {
			t.Errorf("%s: taken for a race", tt.name)
		}
	}

	// An index-only change keeping the content (a resolution restating
	// it) carries the apply along; the race is then against it.
	r = RecentApplies{}
	r.Applied("n.md", before, true, peer, t0, supersedes)
	restated := disk(id(b, 2), 2)
	r.Applied("n.md", peer, true, restated, t0.Add(time.Second), supersedes)
	if got, raced := r.ForLocalChange("n.md", restated, true, edit, t0.Add(1500*time.Millisecond)); !raced || !slices.Equal(got, sup) {
		t.Fatalf("after a restatement: %v %v, want the race against the first apply", got, raced)
	}
	r.Applied("n.md", before, true, peer, t0, supersedes)
	r.Applied("n.md", peer, true, Disk{}, t0.Add(time.Second), supersedes)
	if _, raced := r.ForLocalChange("n.md", Disk{}, false, edit, t0.Add(1500*time.Millisecond)); raced {
		t.Fatal("a deletion did not forget the apply")
	}
}
