package node

import (
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/member"
)

// Recovery (docs/security.md, "Recovery"): a device that holds only a
// vault's recovery phrase asks a member device or a relay for the
// membership log over /weft/recover/1 (internal/netsync) and appends a
// recover record that admits it as an admin; every other device and relay
// learns that record as any other, and the new device then syncs as a
// member. A device answers for the vaults it holds.

// handleRecover answers a recovery stream. The opener is a stranger until
// its proof checks: its attempts share pairing's limits, and a vault not
// held here is answered as a failed proof.
func (n *Node) handleRecover(s network.Stream) {
	defer s.Close()
	dev, f, ok := n.acceptStranger(s)
	if !ok {
		return
	}
	remote := s.Conn().RemotePeer()
	h, err := f.ReadHello()
	if err != nil {
		n.refuseRead(s, dev, err)
		return
	}
	if err := f.AcceptHello(h.Vault); err != nil {
		return
	}
	var target netsync.RecoverTarget
	v := n.vault(h.Vault)
	if v != nil {
		target = recoverTarget{v}
	}
	if err := netsync.ServeRecover(f, n.id.ID(), dev, target); err != nil {
		n.refuse(s, refusal.BadRecovery, dev, err)
		return
	}
	n.admitLimits(remote)
	n.rememberPeer(v, dev, n.host.Peerstore().Addrs(remote))
	name := v.roster.Name(dev)
	n.log.Info("device recovered the vault with its recovery phrase", "peer", dev, "name", name, "folder", v.cfg.Folder)
	n.events.Publish(api.Event{Type: api.EventPeerJoined, Peer: dev.String(), Name: name, Folder: v.cfg.Folder})
}

// recoverTarget is a vault's membership as /weft/recover/1 serves it.
type recoverTarget struct{ v *vault }

func (t recoverTarget) Records() []member.Record { return t.v.roster.Records() }

func (t recoverTarget) Append(rec member.Record) error {
	if rec.Seq != t.v.roster.Seq()+1 {
		return netsync.ErrMembershipMoved
	}
	return t.v.ingestMember(rec.Encode())
}
