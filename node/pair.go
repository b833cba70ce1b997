package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/enrol"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Pairing (/weft/pair/1). `weft invite` asks the running agent for a
// one-time code; the joining device dials the inviter at the addresses in
// the code, proves it holds the code's secret, and receives the vault's
// secrets wrapped under a key derived from the code, with the membership
// records, the last of which (signed by the inviter, an admin) admits it.
// A code works once, until it expires. A code made with confirmation
// (`weft invite --confirm`) holds each join until a person approves it
// (roster.Invites.Decide), showing on both devices the words the code and
// the joiner give (member.Invite.Words).

// DefaultInviteTTL is how long an invite code is valid.
const DefaultInviteTTL = time.Hour

// Invite issues a one-time code for vault v (the first vault when vaultID
// is the zero value), valid for ttl; with confirm, each join by it waits
// for approval (ApproveJoin).
func (n *Node) Invite(vaultID keys.VaultID, ttl time.Duration, confirm bool) (member.Invite, error) {
	v := n.vault(vaultID)
	if v == nil && vaultID == (keys.VaultID{}) && len(n.vaultsNow()) > 0 {
		v = n.vaultsNow()[0]
	}
	if v == nil {
		return member.Invite{}, fmt.Errorf("no vault %s on this device", vaultID)
	}
	if !v.roster.CanAdmit(n.id.ID()) {
		return member.Invite{}, errors.New("only the vault's admins can invite (`weft devices` lists them)")
	}
	if ttl <= 0 {
		ttl = DefaultInviteTTL
	}
	var addrs []string
	for _, a := range n.host.Addrs() {
		addrs = append(addrs, a.String())
	}
	inv, err := member.NewInvite(rand.Reader, n.id.ID(), addrs, n.now().Add(ttl).Unix())
	if err != nil {
		return member.Invite{}, err
	}
	n.invites.Add(inv, v.id, confirm)
	return inv, nil
}

// WaitingJoins lists the joins waiting for approval.
func (n *Node) WaitingJoins() []api.WaitingJoin {
	var out []api.WaitingJoin
	for _, j := range n.invites.Waiting() {
		w := api.WaitingJoin{Device: j.Joiner.String(), Name: j.Name, Words: j.Words, Since: j.Since.UTC()}
		if v := n.vault(j.Vault); v != nil {
			w.Folder = v.cfg.Folder
		}
		out = append(out, w)
	}
	return out
}

// DecideJoin approves or denies the waiting join of the device whose
// peer ID is, or starts with, prefix.
func (n *Node) DecideJoin(prefix string, approve bool) (api.WaitingJoin, error) {
	var match []api.WaitingJoin
	for _, w := range n.WaitingJoins() {
		if strings.HasPrefix(w.Device, prefix) && prefix != "" {
			match = append(match, w)
		}
	}
	switch len(match) {
	case 0:
		return api.WaitingJoin{}, fmt.Errorf("no join of a device %q waits for approval (`weft devices pending` lists them)", prefix)
	case 1:
	default:
		return api.WaitingJoin{}, fmt.Errorf("%d waiting joins match %q; give more of the device ID", len(match), prefix)
	}
	d, err := keys.ParseDeviceID(match[0].Device)
	if err != nil {
		return api.WaitingJoin{}, err
	}
	return match[0], n.invites.Decide(d, approve)
}

// acceptStranger starts answering a stream of the protocols strangers
// are meant to use (pairing, recovery): the opener is a stranger until its
// proof checks, so its attempts are rate-limited before anything is read
// (pairing's limits, shared), and it has helloTimeout to send what it
// must. ok is false once the stream is refused.
func (n *Node) acceptStranger(s network.Stream) (dev keys.DeviceID, f *wire.Conn, ok bool) {
	remote := s.Conn().RemotePeer()
	dev, err := DeviceIDOf(remote)
	if err != nil {
		n.refuseRead(s, remote, fmt.Errorf("%w: %w", refusal.ErrNotDevice, err))
		return dev, nil, false
	}
	f = inboundConn(s)
	if err := n.strangers.attempts.Allow(dev, n.now()); err != nil {
		f.SendError(wire.CodeRateLimited, "too many attempts; try again in a minute")
		n.refuse(s, refusal.RateLimited, dev, err)
		return dev, nil, false
	}
	_ = s.SetDeadline(time.Now().Add(helloTimeout)) // the network's clock, not n.now (which tests may skew)
	return dev, f, true
}

// handlePair answers a pairing stream. The joiner's request may be at
// most wire.MaxPairRequestFrame bytes.
func (n *Node) handlePair(ctx context.Context, s network.Stream) {
	defer s.Close()
	dev, f, ok := n.acceptStranger(s)
	if !ok {
		return
	}
	remote := s.Conn().RemotePeer()
	p, err := f.ExpectLimit(wire.MsgPairRequest, wire.MaxPairRequestFrame)
	if err != nil {
		n.refuseRead(s, dev, err)
		return
	}
	req, err := wire.ParsePairRequest(p)
	if err != nil {
		f.SendError(wire.CodeProtocol, err.Error())
		n.refuse(s, refusal.Malformed, dev, err)
		return
	}
	if req.Name != "" {
		if err := member.CheckName(req.Name); err != nil {
			f.SendError(wire.CodeProtocol, err.Error())
			n.refuse(s, refusal.Malformed, dev, err)
			return
		}
	}
	taken, err := n.invites.Take(dev, req.Name, req.Proof, n.now())
	if err != nil {
		f.SendError(wire.CodeInviteInvalid, err.Error())
		n.refuse(s, refusal.BadInvite, dev, err)
		return
	}
	inv, vid := taken.Invite, taken.Vault
	var words string
	if j := taken.Join; j != nil {
		words = j.Words
		if !n.awaitApproval(ctx, s, f, j) {
			return
		}
	}
	_ = s.SetDeadline(time.Now().Add(time.Minute)) // the network's clock, as above
	f.SetCounter(n.counters(dev))
	v := n.vault(vid)
	if v == nil {
		n.log.Warn("refusing a join: the invite's vault was removed from this device", "peer", dev, "vault", vid)
		f.SendError(wire.CodeInviteInvalid, "the vault of this invite code is no longer on the inviting device")
		return
	}
	if err := v.admit(dev, req.Name); err != nil {
		n.log.Error("admitting device", "peer", dev, "err", err)
		f.SendError(wire.CodeInternal, "the inviter could not record the new member")
		return
	}
	wrapped, err := inv.Wrap(rand.Reader, dev, v.secrets.Bytes())
	if err != nil {
		f.SendError(wire.CodeInternal, "wrapping keys")
		return
	}
	var records [][]byte
	for _, r := range v.roster.Records() {
		records = append(records, r.Encode())
	}
	if err := f.Send(wire.MsgPairAccept, wire.PairAccept{WrappedKeys: wrapped, Records: records}); err != nil {
		return
	}
	if err := f.Flush(); err != nil {
		return
	}
	n.admitLimits(remote)
	n.rememberPeer(v, dev, n.host.Peerstore().Addrs(remote))
	n.log.Info("device joined", "peer", dev, "name", req.Name, "folder", v.cfg.Folder, "words", words)
	n.events.Publish(api.Event{Type: api.EventPeerJoined, Peer: dev.String(), Name: req.Name, Folder: v.cfg.Folder, Words: words})
	// Start syncing with the new member right away.
	n.goRun(func(ctx context.Context) { n.syncWith(ctx, remote) })
}

// awaitApproval holds a join of a confirm code until a person decides it
// (DecideJoin), tells the joiner it waits (PairPending) and announces it
// (event join-pending). It returns whether the join was approved; when
// not, the joiner has been told why.
func (n *Node) awaitApproval(ctx context.Context, s network.Stream, f *wire.Conn, j *roster.Join) bool {
	_ = s.SetDeadline(time.Now().Add(enrol.ConfirmWait + time.Minute)) // the network's clock
	if err := f.SendRaw(wire.MsgPairPending, nil); err != nil {
		return false
	}
	if err := f.Flush(); err != nil {
		return false
	}
	folder := ""
	if v := n.vault(j.Vault); v != nil {
		folder = v.cfg.Folder
	}
	n.log.Info("a device asks to join; approve it with `weft devices approve` if it shows these words", "peer", j.Joiner, "name", j.Name, "folder", folder, "words", j.Words)
	n.events.Publish(api.Event{Type: api.EventJoinPending, Peer: j.Joiner.String(), Name: j.Name, Folder: folder, Words: j.Words})
	ctx, cancel := context.WithTimeout(ctx, enrol.ConfirmWait)
	defer cancel()
	// A joiner that gives up (closes the stream) withdraws its join.
	go func() {
		_, _ = s.Read(make([]byte, 1))
		cancel()
	}()
	if err := n.invites.Wait(ctx, j); err != nil {
		f.SendError(wire.CodeJoinDenied, err.Error())
		_ = f.Flush()
		n.log.Info("join not approved", "peer", j.Joiner, "folder", folder, "why", err)
		return false
	}
	return true
}
