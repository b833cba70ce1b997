package relay

import (
	"testing"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// What a device's LogStatus said is passed on to the other devices, each
// device's vector only when it changed since what a stream was sent: one
// device's change costs one vector per stream.
func TestHoldsForSendsOnlyChanges(t *testing.T) {
	r := &replica{grown: make(chan struct{})}
	a, b, c := keys.DeviceID{1}, keys.DeviceID{2}, keys.DeviceID{3}
	members := map[keys.DeviceID]bool{a: true, b: true, c: true}
	isMember := func(d keys.DeviceID) bool { return members[d] }
	holdsFor := func(dev keys.DeviceID, since uint64) ([]wire.Holds, uint64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return holdsSince(r.devHolds, r.devGen, dev, since, isMember), r.holdsGen
	}

	r.noteHolds(a, []wire.VectorEntry{{Author: a, Seq: 5}})
	r.noteHolds(b, []wire.VectorEntry{{Author: a, Seq: 4}, {Author: b, Seq: 2}})
	hs, gen := holdsFor(c, 0)
	if len(hs) != 1 || len(hs[0].Devices) != 2 {
		t.Fatalf("first send to c: %+v, want a and b", hs)
	}
	if hs, _ := holdsFor(a, 0); len(hs) != 1 || len(hs[0].Devices) != 1 || hs[0].Devices[0].Device != b {
		t.Fatalf("to a: %+v, want only b (never a device's own)", hs)
	}
	if hs, g := holdsFor(c, gen); len(hs) != 0 || g != gen {
		t.Fatalf("nothing changed: %+v gen %d, want none, %d", hs, g, gen)
	}
	r.noteHolds(b, []wire.VectorEntry{{Author: b, Seq: 3}}) // a later LogStatus: changes only
	hs, gen2 := holdsFor(c, gen)
	if len(hs) != 1 || len(hs[0].Devices) != 1 || hs[0].Devices[0].Device != b || len(hs[0].Devices[0].Vector) != 2 || gen2 <= gen {
		t.Fatalf("after b changed: %+v, want b alone with its whole merged vector", hs)
	}
	r.noteHolds(b, []wire.VectorEntry{{Author: b, Seq: 3}}) // the same again
	if _, g := holdsFor(c, gen2); g != gen2 {
		t.Fatal("an unchanged LogStatus counted as a change")
	}
	delete(members, a) // revoked: no longer passed on
	if hs, _ := holdsFor(c, 0); len(hs) != 1 || len(hs[0].Devices) != 1 || hs[0].Devices[0].Device != b {
		t.Fatalf("after a's revocation: %+v, want only b", hs)
	}
}
