package node

import (
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/protocol/keys"
)

// keepConnectivity runs until ctx ends: it keeps connection kinds and
// connection-manager protection current (watchConns) and holds
// reservations on Config.Relays and on every vault's relays (from its
// signed membership, so a relay added on any device is picked up),
// dialling members through them (connect.Reservations).
func (n *Node) keepConnectivity(ctx context.Context) {
	static, err := connect.ParseRelays(n.cfg.Relays)
	if err != nil {
		n.log.Warn("ignoring configured relays", "err", err)
	}
	res := &connect.Reservations{
		Host: n.host, Self: n.id.ID(), Log: n.log, Now: n.now,
		Relays: func() []peer.AddrInfo {
			out := slices.Clone(static)
			seen := map[peer.ID]bool{}
			for _, i := range out {
				seen[i.ID] = true
			}
			for _, v := range n.vaultsNow() {
				for _, r := range v.relays() {
					if !seen[r.info.ID] {
						seen[r.info.ID] = true
						out = append(out, r.info)
					}
				}
			}
			return out
		},
		Members: func() []keys.DeviceID {
			var out []keys.DeviceID
			for _, v := range n.vaultsNow() {
				out = append(out, v.roster.Members()...)
			}
			return out
		},
	}
	stop := n.watchConns(res.IsRelay)
	defer stop()
	res.Run(ctx)
}

// reclassify updates the reported kind of a connected member p after its
// set of connections changed (a punch succeeded, or one of several
// connections closed).
func (n *Node) reclassify(p peer.ID) {
	dev, err := DeviceIDOf(p)
	if err != nil || !n.isPeerAnywhere(dev) {
		return
	}
	kind := connect.PeerKind(n.host, p, n.cfg.Punches)
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
		if !connect.IsRelayed(c) {
			n.cfg.Punches.Mark(c.ID())
		}
	}
	n.reclassify(p)
}

// watchConns keeps connection kinds and connection-manager protection
// current as connections open and close. isRelay tells relay peers.
func (n *Node) watchConns(isRelay func(peer.ID) bool) (stop func()) {
	n.cfg.Punches.SetOnSuccess(n.onPunched)
	nb := &network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			n.protectConn(c.RemotePeer(), isRelay)
			n.reclassify(c.RemotePeer())
		},
		DisconnectedF: func(_ network.Network, c network.Conn) {
			n.cfg.Punches.Forget(c.ID())
			p := c.RemotePeer()
			if n.host.Network().Connectedness(p) == network.Connected {
				n.reclassify(p)
				return
			}
			n.host.ConnManager().Unprotect(p, connect.ProtectRelay)
			n.host.ConnManager().Unprotect(p, connect.ProtectMember)
		},
	}
	n.host.Network().Notify(nb)
	return func() {
		n.host.Network().StopNotify(nb)
		n.cfg.Punches.SetOnSuccess(nil)
	}
}

// protectConn keeps the connection manager from trimming connections to a
// relay this device reserves on or to a member of one of its vaults.
func (n *Node) protectConn(p peer.ID, isRelay func(peer.ID) bool) {
	if isRelay(p) {
		n.host.ConnManager().Protect(p, connect.ProtectRelay)
	}
	if dev, err := DeviceIDOf(p); err == nil && n.isMemberAnywhere(dev) {
		n.host.ConnManager().Protect(p, connect.ProtectMember)
	}
}
