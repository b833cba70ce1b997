package p2p

import (
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

func TestBans(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewBans()
	b.now = func() time.Time { return now }
	p, q := peer.ID("p"), peer.ID("q")
	if !b.Ban(p, time.Minute) {
		t.Fatal("first ban: got false, want true")
	}
	if b.Ban(p, time.Minute) {
		t.Fatal("second ban while banned: got true, want false")
	}
	if b.InterceptSecured(network.DirInbound, p, nil) || b.InterceptPeerDial(p) {
		t.Fatal("a banned peer is let through")
	}
	if !b.InterceptSecured(network.DirInbound, q, nil) {
		t.Fatal("a peer not banned is refused")
	}
	now = now.Add(time.Minute)
	if b.Banned(p) {
		t.Fatal("still banned after the ban's time")
	}
	for i := 0; i < 2*maxBans; i++ {
		b.Ban(peer.ID(fmt.Sprint(i)), time.Minute)
	}
	if len(b.until) > maxBans {
		t.Fatalf("remembering %d bans, want at most %d", len(b.until), maxBans)
	}
	now = now.Add(time.Minute)
	if !b.Ban(q, time.Minute) || !b.Banned(q) {
		t.Fatal("once the old bans expired, a new one is not recorded")
	}
}
