package node

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// agent is what a vault asks of the agent that runs it (the Node): the
// network (streams, connections, who is connected), the goroutines Run
// owns, and the clock corrected by its members' offsets. It is the whole
// of the vault's dependency on the Node; everything else the vault is
// given at open (openVault): the device's identity, the event bus, the
// clock, the counters and the limits of its configuration.
type agent interface {
	// newStream opens a stream of proto to p.
	newStream(ctx context.Context, p peer.ID, proto protocol.ID) (network.Stream, error)
	// closePeer ends every connection to p.
	closePeer(p peer.ID)
	// outboundConn wraps a stream this device opened to dev, counting
	// its bytes as dev's.
	outboundConn(s network.Stream, dev keys.DeviceID) *wire.Conn
	// counters are the byte counters of the connection to d.
	counters(d keys.DeviceID) *peerCounters
	// connectedMembers are v's members and relays connected now.
	connectedMembers(v *vault) []connected
	// syncWithDevice starts syncing every vault with d if it is connected.
	syncWithDevice(d keys.DeviceID)
	// kickPullers wakes v's log pullers.
	kickPullers(v *vault)
	// wakeDial wakes the dial loop: a peer to dial may have been learned.
	wakeDial()
	// rememberPeer records where d was reachable for v.
	rememberPeer(v *vault, d keys.DeviceID, addrs []ma.Multiaddr)
	// goRun runs f on a goroutine Run owns; false when Run has ended.
	goRun(f func(ctx context.Context)) bool
	// vaultNow is the clock corrected by the members' offsets.
	vaultNow() time.Time
	// monitor is the API's monitor while the API runs, else nil.
	monitor() *monitor
}

var _ agent = (*Node)(nil)

func (n *Node) newStream(ctx context.Context, p peer.ID, proto protocol.ID) (network.Stream, error) {
	return n.host.NewStream(ctx, p, proto)
}

func (n *Node) closePeer(p peer.ID) {
	if n.host != nil {
		_ = n.host.Network().ClosePeer(p)
	}
}
