package node

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// Of two members, exactly one dials the other through a relay at once;
// the other waits relayDialDefer of having no connection first, and a
// connection in between restarts its wait. (Both dialling at once makes
// two relayed connections and two DCUtR punches that collide.)
func TestRelayDialOnePerPair(t *testing.T) {
	var a, b keys.DeviceID
	a[0], b[0] = 1, 2
	if relayDefer(a, b) != 0 || relayDefer(b, a) != relayDialDefer {
		t.Fatalf("relayDefer(a, b) = %v, relayDefer(b, a) = %v: want 0 and %v", relayDefer(a, b), relayDefer(b, a), relayDialDefer)
	}

	d := newRelayDialer()
	t0 := time.Unix(1000, 0)
	if !d.waited(a, t0, 0) {
		t.Fatal("the lower device waits before its dial")
	}
	if d.waited(b, t0, relayDialDefer) {
		t.Fatal("the higher device dials as soon as it sees no connection")
	}
	if d.waited(b, t0.Add(relayDialDefer-time.Second), relayDialDefer) {
		t.Fatal("the higher device dials before relayDialDefer has passed")
	}
	if !d.waited(b, t0.Add(relayDialDefer), relayDialDefer) {
		t.Fatal("the higher device never dials a member that did not dial it")
	}
	d.reached(b) // the lower one's relayed connection arrived
	if d.waited(b, t0.Add(2*relayDialDefer), relayDialDefer) {
		t.Fatal("a connection did not restart the higher device's wait")
	}
	if !d.waited(b, t0.Add(3*relayDialDefer), relayDialDefer) {
		t.Fatal("the higher device never dials after the connection went away")
	}
}
