package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Pairing (/weft/pair/1). `weft invite` asks the running agent for a
// one-time code; the joining device dials the inviter at the addresses in
// the code, proves it holds the code's secret, and receives the vault's
// root secret wrapped under a key derived from the code, with the
// membership records, the last of which (signed by the inviter, the
// vault's admin) admits it. A code works once, until it expires.

// DefaultInviteTTL is how long an invite code is valid.
const DefaultInviteTTL = time.Hour

// Invite issues a one-time code for vault v (the first vault when vaultID
// is the zero value), valid for ttl.
func (n *Node) Invite(vaultID keys.VaultID, ttl time.Duration) (member.Invite, error) {
	v := n.vault(vaultID)
	if v == nil && vaultID == (keys.VaultID{}) && len(n.vaultsNow()) > 0 {
		v = n.vaultsNow()[0]
	}
	if v == nil {
		return member.Invite{}, fmt.Errorf("no vault %s on this device", vaultID)
	}
	if role, ok := v.roster.Role(n.id.ID()); !ok || role != member.RoleAdmin {
		return member.Invite{}, errors.New("only the vault's admin (the device that created it) can invite")
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
	n.invites.Add(inv, v.id)
	return inv, nil
}

// handlePair answers a pairing stream.
func (n *Node) handlePair(s network.Stream) {
	defer s.Close()
	remote := s.Conn().RemotePeer()
	dev, err := DeviceIDOf(remote)
	if err != nil {
		n.refuseRead(s, remote, fmt.Errorf("%w: %w", refusal.ErrNotDevice, err))
		return
	}
	// The joiner is a stranger until its proof checks: its attempts are
	// rate-limited before anything is read, and its request may be at
	// most wire.MaxPairRequestFrame bytes, sent within helloTimeout.
	f := inboundConn(s)
	if err := n.strangers.allowPair(dev, n.now()); err != nil {
		f.SendError(wire.CodeRateLimited, "too many pairing attempts; try again in a minute")
		n.refuse(s, refusal.RateLimited, dev, err)
		return
	}
	_ = s.SetDeadline(time.Now().Add(helloTimeout)) // the network's clock, not n.now (which tests may skew)
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
	inv, vid, err := n.invites.Take(dev, req.Proof, n.now())
	if err != nil {
		f.SendError(wire.CodeInviteInvalid, err.Error())
		n.refuse(s, refusal.BadInvite, dev, err)
		return
	}
	_ = s.SetDeadline(time.Now().Add(time.Minute)) // the network's clock, as above
	f.SetCounter(n.counters(dev))
	v := n.vault(vid)
	if v == nil {
		n.log.Warn("refusing a join: the invite's vault was removed from this device", "peer", dev, "vault", vid)
		f.SendError(wire.CodeInviteInvalid, "the vault of this invite code is no longer on the inviting device")
		return
	}
	if err := v.admit(dev); err != nil {
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
	n.log.Info("device joined", "peer", dev, "folder", v.cfg.Folder)
	n.events.Publish(api.Event{Type: api.EventPeerJoined, Peer: dev.String(), Folder: v.cfg.Folder})
	// Start syncing with the new member right away.
	n.goRun(func(ctx context.Context) { n.syncWith(ctx, remote) })
}

// Joined is what a successful join returns.
type Joined struct {
	Secrets keys.VaultSecrets
	Records []member.Record
	Inviter peer.AddrInfo
}

// RequestJoin dials the inviter named in inv from host h (identity id),
// proves the code, and returns the vault keys and membership. It checks
// everything it receives: the records chain and are signed by the admin,
// the last one admits this device, and the secrets name the records'
// vault (whose genesis proves its ID). It changes nothing on disk.
func RequestJoin(ctx context.Context, h host.Host, id *keys.Identity, inv member.Invite) (Joined, error) {
	var j Joined
	pid, err := PeerIDOf(inv.Inviter)
	if err != nil {
		return j, err
	}
	info := peer.AddrInfo{ID: pid}
	for _, a := range inv.Addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			continue
		}
		info.Addrs = append(info.Addrs, m)
	}
	if len(info.Addrs) == 0 {
		return j, errors.New("the invite code names no usable address for the inviter")
	}
	if err := h.Connect(ctx, info); err != nil {
		return j, fmt.Errorf("reaching the inviting device (is `weft up` running there?): %w", err)
	}
	s, err := h.NewStream(ctx, pid, ProtoPair)
	if err != nil {
		return j, fmt.Errorf("opening pairing stream: %w", err)
	}
	defer s.Close()
	f := wire.NewConn(s, &peerCounters{})
	if err := f.Send(wire.MsgPairRequest, wire.PairRequest{Proof: inv.Proof(id.ID())}); err != nil {
		return j, err
	}
	if err := f.Flush(); err != nil {
		return j, err
	}
	p, err := f.Expect(wire.MsgPairAccept)
	if err != nil {
		var we wire.Error
		if errors.As(err, &we) {
			return j, fmt.Errorf("the inviting device refused: %s", we.Reason)
		}
		return j, fmt.Errorf("pairing: %w", err)
	}
	acc, err := wire.ParsePairAccept(p)
	if err != nil {
		return j, err
	}
	secret, err := inv.Unwrap(id.ID(), acc.WrappedKeys)
	if err != nil {
		return j, err
	}
	switch len(secret) {
	case keys.VaultSecretsSize:
		if j.Secrets, err = keys.ParseVaultSecrets(secret); err != nil {
			return j, fmt.Errorf("pairing: %w", err)
		}
	case len(keys.RootSecret{}):
		// An inviter older than recovery sends the root secret; this
		// device keeps only what a member needs of it.
		j.Secrets = keys.RootSecret(secret).Secrets()
	default:
		return j, fmt.Errorf("pairing: vault secrets of %d bytes", len(secret))
	}
	state := member.NewState(j.Secrets.Vault().ID)
	for i, raw := range acc.Records {
		r, err := member.Decode(raw)
		if err != nil {
			return j, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		if err := state.Apply(r); err != nil {
			return j, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		j.Records = append(j.Records, r)
	}
	if !state.IsMember(id.ID()) {
		return j, errors.New("pairing: the membership records do not admit this device")
	}
	if !state.CanAdmit(inv.Inviter, member.RoleMember) {
		return j, errors.New("pairing: the inviter may not admit devices to the vault")
	}
	j.Inviter = info
	return j, nil
}
