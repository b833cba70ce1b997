package connect

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Connection kinds, as status reports them per peer (docs/connectivity.md).
const (
	ConnLAN         = "lan"         // a private or loopback address: same network
	ConnDirect      = "direct"      // a public address, dialled directly
	ConnHolepunched = "holepunched" // direct, made by a DCUtR hole punch
	ConnRelayed     = "relayed"     // through a circuit v2 relay
)

// PunchTracer is a holepunch.EventTracer that remembers which connections
// a DCUtR hole punch made, so status can tell them from connections that
// were dialled directly. Give it to HostConfig.Punches when building a
// host and to Config.Punches when running a node on that host. A nil
// *PunchTracer records nothing.
type PunchTracer struct {
	mu        sync.Mutex
	onSuccess func(peer.ID)
	conns     map[string]bool // IDs of connections a punch made
}

// NewPunchTracer returns an empty tracer.
func NewPunchTracer() *PunchTracer {
	return &PunchTracer{conns: map[string]bool{}}
}

var _ holepunch.EventTracer = (*PunchTracer)(nil)

// Trace implements holepunch.EventTracer. Only a successful EndHolePunch
// matters: at that moment the direct connection to the remote peer exists
// (holepunch's own Connect returned), so the node marks it.
func (t *PunchTracer) Trace(evt *holepunch.Event) {
	if t == nil || evt.Type != holepunch.EndHolePunchEvtT {
		return
	}
	end, ok := evt.Evt.(*holepunch.EndHolePunchEvt)
	if !ok || !end.Success {
		return
	}
	t.mu.Lock()
	f := t.onSuccess
	t.mu.Unlock()
	if f != nil {
		f(evt.Remote)
	}
}

// SetOnSuccess installs the node's callback for successful punches.
func (t *PunchTracer) SetOnSuccess(f func(peer.ID)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.onSuccess = f
	t.mu.Unlock()
}

// Mark records that a punch made connection id.
func (t *PunchTracer) Mark(id string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.conns[id] = true
	t.mu.Unlock()
}

// Punched reports whether a punch made connection id.
func (t *PunchTracer) Punched(id string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[id]
}

// Forget drops a closed connection.
func (t *PunchTracer) Forget(id string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.conns, id)
	t.mu.Unlock()
}

// IsRelayed reports whether c goes through a relay: a /p2p-circuit remote
// address, or a connection the relay limits in time or bytes.
func IsRelayed(c network.Conn) bool {
	if c.Stat().Limited {
		return true
	}
	_, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// Kind names how c reaches its peer: relayed, holepunched (a direct
// connection a DCUtR punch made, as punches recorded), lan (a private or
// loopback address) or direct.
func Kind(c network.Conn, punches *PunchTracer) string {
	switch addr := c.RemoteMultiaddr(); {
	case IsRelayed(c):
		return ConnRelayed
	case punches.Punched(c.ID()):
		return ConnHolepunched
	case manet.IsPrivateAddr(addr) || manet.IsIPLoopback(addr):
		return ConnLAN
	default:
		return ConnDirect
	}
}

// kindRank orders kinds by preference: a peer is reported by its best open
// connection, the kind libp2p prefers for new streams.
var kindRank = map[string]int{ConnRelayed: 0, ConnDirect: 1, ConnHolepunched: 2, ConnLAN: 3}

// BestKind names how the peer of c is reached on h: the kind of the best
// of its open connections, c included (c may not be listed yet while its
// Connected notification runs).
func BestKind(h host.Host, c network.Conn, punches *PunchTracer) string {
	best := Kind(c, punches)
	for _, o := range h.Network().ConnsToPeer(c.RemotePeer()) {
		if k := Kind(o, punches); kindRank[k] > kindRank[best] {
			best = k
		}
	}
	return best
}

// PeerKind is the kind of the best open connection to p on h, or "" if
// none.
func PeerKind(h host.Host, p peer.ID, punches *PunchTracer) string {
	conns := h.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return ""
	}
	return BestKind(h, conns[0], punches)
}

// Connection-manager protection tags.
const (
	ProtectRelay  = "weft-relay"
	ProtectMember = "weft-member"
)
