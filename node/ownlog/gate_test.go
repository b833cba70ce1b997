package ownlog

import (
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

var peerA, peerB = keys.DeviceID{0xa}, keys.DeviceID{0xb}

func woke(g *Gate) bool {
	select {
	case <-g.Wake():
		return true
	default:
		return false
	}
}

func TestGateHoldsUntilAPeerIsHeard(t *testing.T) {
	g := NewGate(0, false)
	if !g.Hold([]string{"a", "b"}) || !g.Hold([]string{"b"}) || !g.ReconcileHeld() {
		t.Fatal("a new gate lets authoring or reconciling through")
	}
	if reason, owed := g.Status(); reason == "" || owed != 2 {
		t.Fatalf("status %q, %d owed; want a reason and 2 paths", reason, owed)
	}
	if _, rec := g.Decide(5, []keys.DeviceID{peerA}, false); rec || !g.ReconcileHeld() || woke(g) {
		t.Fatal("opened with no peer heard")
	}
	if !g.Heard(peerA, 5, 5) {
		t.Fatal("the first word from a peer asks for no decision")
	}
	if _, rec := g.Decide(5, []keys.DeviceID{peerA}, false); rec {
		t.Fatal("a recovery reported with nothing taken back")
	}
	if !woke(g) || g.Hold(nil) {
		t.Fatal("authoring did not open once the peer was heard")
	}
	// The owed rescan: reconciling waits for it, and it may not be
	// skipped while changes are owed.
	if !g.ReconcileHeld() || g.OpenWithoutRescan(true) {
		t.Fatal("reconciling opened before the owed rescan")
	}
	if reason, _ := g.Status(); reason != "" {
		t.Fatalf("status %q once open", reason)
	}
	g.FinishRescan()
	if g.ReconcileHeld() {
		t.Fatal("reconciling held after the rescan")
	}
	if g.Heard(peerA, 6, 6) {
		t.Fatal("an acknowledgement of what this device wrote asks for a decision once open")
	}
	if g.Heard(peerA, 6, 6) {
		t.Fatal("the same word heard twice asks for a decision")
	}
}

func TestGateTakesTheTailBackBeforeItOpens(t *testing.T) {
	g := NewGate(0, false)
	if !g.Heard(peerB, 7, 5) {
		t.Fatal("a peer ahead asks for no decision")
	}
	if _, rec := g.Decide(5, []keys.DeviceID{peerB}, false); rec || !g.Hold(nil) {
		t.Fatal("opened while a peer holds more of this device's log")
	}
	if reason, _ := g.Status(); !strings.Contains(reason, "up to 7") {
		t.Fatalf("status %q, want why (a peer holds up to 7)", reason)
	}
	g.TookBack(6)
	g.TookBack(7)
	if !g.IndexMayLag() {
		t.Fatal("entries taken back, and the index is not said to lag")
	}
	r, rec := g.Decide(7, []keys.DeviceID{peerB}, false)
	if !rec || r.Took != 2 || r.From != 6 || r.Source != peerB {
		t.Fatalf("recovery %+v (%v), want 2 from 6 named by peer B", r, rec)
	}
	if _, again := g.Decide(7, []keys.DeviceID{peerB}, false); again {
		t.Fatal("the recovery reported twice")
	}
	if !woke(g) || g.OpenWithoutRescan(true) {
		t.Fatal("a tail taken back must be rescanned, not skipped")
	}
}

func TestGateLostEntriesWaitForEveryPeer(t *testing.T) {
	g := NewGate(9, false) // entries up to 9 lost at open; head is 5
	g.Heard(peerA, 5, 5)
	g.Decide(5, []keys.DeviceID{peerA, peerB}, false)
	if !g.Hold(nil) {
		t.Fatal("opened with lost entries and a peer not heard from")
	}
	g.Heard(peerB, 5, 5)
	g.Decide(5, []keys.DeviceID{peerA, peerB}, false)
	if g.Hold(nil) {
		t.Fatal("held although every peer said nobody holds the lost entries")
	}
}

func TestGateOpensAtStartWithoutRescan(t *testing.T) {
	g := NewGate(0, true)
	g.Decide(0, nil, false) // alone: nobody else can hold this log
	g.OpenAtStart()
	if g.ReconcileHeld() || woke(g) {
		t.Fatal("a gate open at start still owes a rescan")
	}
	if !g.IndexMayLag() {
		t.Fatal("a rebuilt index is not said to lag")
	}
	g.IndexCaughtUp()
	if g.IndexMayLag() {
		t.Fatal("the index still lags after catching up")
	}
}

func TestGateSkipsTheRescanOnlyWhenNothingIsOwed(t *testing.T) {
	held := NewGate(0, false)
	if held.OpenWithoutRescan(true) || !held.Hold(nil) || !held.ReconcileHeld() {
		t.Fatal("a held gate opened by skipping the rescan")
	}
	g := NewGate(0, false)
	g.Hold(nil)
	g.Heard(peerA, 0, 0)
	g.Decide(0, []keys.DeviceID{peerA}, false)
	if g.OpenWithoutRescan(false) {
		t.Fatal("skipped the rescan before any full scan")
	}
	g.NoteScanFailed()
	if g.OpenWithoutRescan(true) {
		t.Fatal("skipped the rescan after a scan failed")
	}
	g2 := NewGate(0, false)
	g2.Heard(peerA, 0, 0)
	g2.Decide(0, []keys.DeviceID{peerA}, false)
	if !g2.OpenWithoutRescan(true) || g2.ReconcileHeld() {
		t.Fatal("a rescan that would find nothing was not skipped")
	}
}

func TestGateForkIsSaidOnce(t *testing.T) {
	g := NewGate(0, false)
	at := time.Unix(1_800_000_000, 0)
	if !g.ForkSeen(4, at) || g.ForkSeen(5, at.Add(time.Hour)) {
		t.Fatal("a fork not reported exactly once")
	}
	if seq, when, ok := g.Fork(); !ok || seq != 4 || !when.Equal(at) {
		t.Fatalf("fork %d at %v (%v), want 4 at the first sighting", seq, when, ok)
	}
	// A peer ahead of a forked log is no reason to wait: what it holds
	// is another history, never taken back.
	g.Heard(peerA, 9, 3)
	g.Decide(3, []keys.DeviceID{peerA}, false)
	if g.Hold(nil) {
		t.Fatal("a forked log waits forever for a tail it cannot take back")
	}
}
