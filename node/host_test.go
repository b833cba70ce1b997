package node

import (
	"crypto/rand"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
)

// TestPeerIDIsDeviceID pins protocol/keys' own peer-ID computation (which
// cannot import libp2p) against libp2p's.
func TestPeerIDIsDeviceID(t *testing.T) {
	for range 20 {
		id, err := keys.GenerateIdentity(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		d := id.ID()
		pid, err := PeerIDOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if pid.String() != d.PeerID() {
			t.Fatalf("got %s from protocol/keys, want libp2p's %s", d.PeerID(), pid)
		}
		priv, err := p2p.Key(id)
		if err != nil {
			t.Fatal(err)
		}
		if hostID, err := peer.IDFromPrivateKey(priv); err != nil || hostID != pid {
			t.Fatalf("libp2p host ID %s, want the device's %s", hostID, pid)
		}
		back, err := DeviceIDOf(pid)
		if err != nil || back != d {
			t.Fatalf("DeviceIDOf: got %v, %v; want %v", back, err, d)
		}
	}
}
