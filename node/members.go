package node

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/members"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Membership on a running device is node/members: invites and the joins
// they admit, recovery, admins, names, settings and revocation. The node
// owns the streams of /weft/pair/1 and /weft/recover/1: it applies the
// stranger limits before members reads anything (acceptStranger), counts
// the refusals members returns, and does what follows an admission on the
// network (limits raised, addresses remembered, a sync started).

// Members is the device's membership service: invites, joins waiting for
// approval, roles, names, settings and revocations of its vaults.
func (n *Node) Members() *members.Service { return n.members }

// handlePair answers a pairing stream (members.Service.AnswerPair).
func (n *Node) handlePair(ctx context.Context, s network.Stream) {
	defer s.Close()
	dev, f, ok := n.acceptStranger(s)
	if !ok {
		return
	}
	j, err := n.members.AnswerPair(ctx, s, f, dev)
	if err != nil {
		n.refuseMember(s, dev, err)
		return
	}
	remote := s.Conn().RemotePeer()
	n.admitLimits(remote)
	v := j.Vault.(memberVault).v
	n.rememberPeer(v, dev, n.host.Peerstore().Addrs(remote))
	// Start syncing with the new member right away.
	n.goRun(func(ctx context.Context) { n.syncWith(ctx, remote) })
}

// handleRecover answers a recovery stream (members.Service.AnswerRecover).
// The opener is a stranger until its proof checks: its attempts share
// pairing's limits.
func (n *Node) handleRecover(s network.Stream) {
	defer s.Close()
	dev, f, ok := n.acceptStranger(s)
	if !ok {
		return
	}
	mv, err := n.members.AnswerRecover(f, dev)
	if err != nil {
		n.refuseMember(s, dev, err)
		return
	}
	remote := s.Conn().RemotePeer()
	n.admitLimits(remote)
	n.rememberPeer(mv.(memberVault).v, dev, n.host.Peerstore().Addrs(remote))
}

// refuseMember counts and logs a refusal node/members returned; other
// errors ended a session members has told and logged already.
func (n *Node) refuseMember(s network.Stream, dev keys.DeviceID, err error) {
	var r *members.Refusal
	switch {
	case !errors.As(err, &r):
	case r.Read:
		n.refuseRead(s, dev, r.Err)
	default:
		n.refuse(s, r.Reason, dev, r.Err)
	}
}

// memberAgent is the node as node/members sees it.
type memberAgent struct{ n *Node }

func (a memberAgent) Self() keys.DeviceID { return a.n.id.ID() }
func (a memberAgent) Now() time.Time      { return a.n.now() }
func (a memberAgent) Publish(e api.Event) { a.n.events.Publish(e) }

func (a memberAgent) Counter(d keys.DeviceID) wire.Counter { return a.n.counters(d) }

// Addrs are the host's listen addresses, as an invite code names them.
func (a memberAgent) Addrs() []string {
	var out []string
	for _, m := range a.n.host.Addrs() {
		out = append(out, m.String())
	}
	return out
}

func (a memberAgent) Vault(id keys.VaultID) members.Vault {
	if v := a.n.vault(id); v != nil {
		return memberVault{v}
	}
	return nil
}

func (a memberAgent) Vaults() []members.Vault {
	var out []members.Vault
	for _, v := range a.n.vaultsNow() {
		out = append(out, memberVault{v})
	}
	return out
}

// memberVault is one vault as node/members sees it.
type memberVault struct{ v *vault }

func (m memberVault) ID() keys.VaultID               { return m.v.id }
func (m memberVault) Folder() string                 { return m.v.cfg.Folder }
func (m memberVault) Roster() *roster.Roster         { return m.v.roster }
func (m memberVault) Secrets() []byte                { return m.v.secrets.Bytes() }
func (m memberVault) LogHead(d keys.DeviceID) uint64 { return m.v.db.Head(d).Seq }
func (m memberVault) Applied(r member.Record)        { m.v.memberApplied(r) }
func (m memberVault) Ingest(raw []byte) error        { return m.v.ingestMember(raw) }
