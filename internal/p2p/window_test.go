package p2p

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	yamuxcfg "github.com/libp2p/go-yamux/v5"
)

// TestStreamWindowOnlyForTrusted: a trusted peer's connections open
// streams with StreamWindow; a stranger's, and one whose peer is not
// known, with yamux's default, which is all the resource manager is
// charged per stream.
func TestStreamWindowOnlyForTrusted(t *testing.T) {
	member := peer.ID("member")
	m := windowedMuxer{wide: wideMuxer(), trusted: func(p peer.ID) bool { return p == member }}
	window := func(p peer.ID) uint32 { return (*yamuxcfg.Config)(m.transport(p)).InitialStreamWindowSize }
	def := yamuxcfg.DefaultConfig().InitialStreamWindowSize
	if got := window(member); got != StreamWindow {
		t.Errorf("a member's streams open with %d, want %d", got, StreamWindow)
	}
	for _, p := range []peer.ID{"stranger", ""} {
		if got := window(p); got != def {
			t.Errorf("peer %q: streams open with %d, want yamux's %d", p, got, def)
		}
	}
	if def >= StreamWindow {
		t.Fatalf("yamux's default window %d is not below StreamWindow %d: the test proves nothing", def, StreamWindow)
	}
}
