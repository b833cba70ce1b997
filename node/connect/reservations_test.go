package connect

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

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

// fakeConn is a relayed connection for stale: its direction, when it
// opened, and whether it was closed.
type fakeConn struct {
	network.Conn
	stat   network.ConnStats
	closed *bool
}

func (c fakeConn) Stat() network.ConnStats { return c.stat }
func (c fakeConn) Close() error            { *c.closed = true; return nil }

func relayed(dir network.Direction, opened time.Time) (fakeConn, *bool) {
	closed := new(bool)
	return fakeConn{stat: network.ConnStats{Stats: network.Stats{Direction: dir, Opened: opened}}, closed: closed}, closed
}

// Each side times only the relayed connections it dialled: the dialler
// closes its own after the punch wait (which then doubles), and the other
// side leaves it alone until punchRetryMax, so the two never take turns
// closing each other's connections.
func TestRelayStaleOwnDialsOnly(t *testing.T) {
	var dev keys.DeviceID
	dev[0] = 9
	t0 := time.Unix(1000, 0)

	d := newRelayDialer()
	out, outClosed := relayed(network.DirOutbound, t0)
	if d.stale(dev, []network.Conn{out}, t0.Add(punchRetryMin-time.Second)) || *outClosed {
		t.Fatal("own relayed connection closed before the punch wait")
	}
	if !d.stale(dev, []network.Conn{out}, t0.Add(punchRetryMin)) || !*outClosed {
		t.Fatal("own relayed connection not closed after the punch wait")
	}
	out2, out2Closed := relayed(network.DirOutbound, t0.Add(punchRetryMin))
	if d.stale(dev, []network.Conn{out2}, t0.Add(punchRetryMin+punchRetryMin+time.Second)) || *out2Closed {
		t.Fatal("the punch wait did not double after a close")
	}

	other := newRelayDialer() // the side that was dialled
	in, inClosed := relayed(network.DirInbound, t0)
	for _, age := range []time.Duration{punchRetryMin, 2 * punchRetryMin, 10 * punchRetryMin, punchRetryMax - time.Second} {
		if other.stale(dev, []network.Conn{in}, t0.Add(age)) || *inClosed {
			t.Fatalf("the dialled side closed the other's connection at age %v", age)
		}
	}
	if !other.stale(dev, []network.Conn{in}, t0.Add(punchRetryMax)) || !*inClosed {
		t.Fatal("a relayed connection the other side left alone is never closed")
	}

	// Both dialled at once: each side times its own and closes both.
	both := newRelayDialer()
	o, oClosed := relayed(network.DirOutbound, t0)
	i, iClosed := relayed(network.DirInbound, t0.Add(time.Second))
	if !both.stale(dev, []network.Conn{o, i}, t0.Add(punchRetryMin)) || !*oClosed || !*iClosed {
		t.Fatal("with both dials, the side's own aged connection did not close both")
	}
}
