package node

import (
	"sync"

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

// setOnSuccess installs the node's callback for successful punches.
func (t *PunchTracer) setOnSuccess(f func(peer.ID)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.onSuccess = f
	t.mu.Unlock()
}

// mark records that a punch made connection id.
func (t *PunchTracer) mark(id string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.conns[id] = true
	t.mu.Unlock()
}

// punched reports whether a punch made connection id.
func (t *PunchTracer) punched(id string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[id]
}

// forget drops a closed connection.
func (t *PunchTracer) forget(id string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.conns, id)
	t.mu.Unlock()
}

// isRelayed reports whether c goes through a relay: a /p2p-circuit remote
// address, or a connection the relay limits in time or bytes.
func isRelayed(c network.Conn) bool {
	if c.Stat().Limited {
		return true
	}
	_, err := c.RemoteMultiaddr().ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// connKind names how c reaches its peer: relayed, holepunched (a direct
// connection a DCUtR punch made), lan (a private or loopback address) or
// direct.
func (n *Node) connKind(c network.Conn) string {
	switch addr := c.RemoteMultiaddr(); {
	case isRelayed(c):
		return ConnRelayed
	case n.cfg.Punches.punched(c.ID()):
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

// connectionKind names how the peer of c is reached: the kind of the best
// of its open connections, c included (c may not be listed yet while its
// Connected notification runs).
func (n *Node) connectionKind(c network.Conn) string {
	best := n.connKind(c)
	for _, o := range n.host.Network().ConnsToPeer(c.RemotePeer()) {
		if k := n.connKind(o); kindRank[k] > kindRank[best] {
			best = k
		}
	}
	return best
}

// peerKind is the kind of the best open connection to p, or "" if none.
func (n *Node) peerKind(p peer.ID) string {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return ""
	}
	return n.connectionKind(conns[0])
}

// reclassify updates the reported kind of a connected member p after its
// set of connections changed (a punch succeeded, or one of several
// connections closed).
func (n *Node) reclassify(p peer.ID) {
	dev, err := DeviceIDOf(p)
	if err != nil || !n.isPeerAnywhere(dev) {
		return
	}
	kind := n.peerKind(p)
	if kind == "" {
		return
	}
	ps := n.peerState(dev)
	n.mu.Lock()
	changed := ps.connected && ps.conn != kind
	if ps.connected {
		ps.conn = kind
	}
	n.mu.Unlock()
	if changed {
		n.log.Info("peer connection changed", "peer", dev, "kind", kind)
	}
}

// onPunched marks the direct connections to p that a successful hole
// punch just made, and reclassifies p.
func (n *Node) onPunched(p peer.ID) {
	for _, c := range n.host.Network().ConnsToPeer(p) {
		if !isRelayed(c) {
			n.cfg.Punches.mark(c.ID())
		}
	}
	n.reclassify(p)
}

// watchConns keeps connection kinds and connection-manager protection
// current as connections open and close. isRelay tells relay peers.
func (n *Node) watchConns(isRelay func(peer.ID) bool) (stop func()) {
	n.cfg.Punches.setOnSuccess(n.onPunched)
	nb := &network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			n.protectConn(c.RemotePeer(), isRelay)
			n.reclassify(c.RemotePeer())
		},
		DisconnectedF: func(_ network.Network, c network.Conn) {
			n.cfg.Punches.forget(c.ID())
			p := c.RemotePeer()
			if n.host.Network().Connectedness(p) == network.Connected {
				n.reclassify(p)
				return
			}
			n.host.ConnManager().Unprotect(p, protectRelay)
			n.host.ConnManager().Unprotect(p, protectMember)
		},
	}
	n.host.Network().Notify(nb)
	return func() {
		n.host.Network().StopNotify(nb)
		n.cfg.Punches.setOnSuccess(nil)
	}
}

// Connection-manager protection tags.
const (
	protectRelay  = "weft-relay"
	protectMember = "weft-member"
)

// protectConn keeps the connection manager from trimming connections to a
// relay this device reserves on or to a member of one of its vaults.
func (n *Node) protectConn(p peer.ID, isRelay func(peer.ID) bool) {
	if isRelay(p) {
		n.host.ConnManager().Protect(p, protectRelay)
	}
	if dev, err := DeviceIDOf(p); err == nil && n.isMemberAnywhere(dev) {
		n.host.ConnManager().Protect(p, protectMember)
	}
}
