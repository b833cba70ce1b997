package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/pullset"
	"github.com/weftsync/weft/node/heard"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/relay"
)

// A vault's relays are listed in its signed membership (`weft relay add`).
// A device dials each, enrolls the vault on it (/weft/relay/1: the relay
// checks the membership log names it and the device), and then syncs
// with it like with another device: it pulls the relay's log (entries of
// devices that are offline now) and answers the relay's pulls of its own
// log and chunks. A relay that says it holds an entry makes it safe.

// relayRef is one relay of a vault.
type relayRef struct {
	addr string // as recorded
	info peer.AddrInfo
	dev  keys.DeviceID
}

// relays lists the vault's relays that parse; a bad address in the
// membership is skipped (and reported by doctor).
func (v *vault) relays() []relayRef {
	addrs := v.roster.Relays()
	var out []relayRef
	for _, a := range addrs {
		info, d, err := relay.ParseAddr(a)
		if err != nil {
			continue
		}
		out = append(out, relayRef{addr: a, info: info, dev: d})
	}
	return out
}

// isRelay reports whether d is one of the vault's relays.
func (v *vault) isRelay(d keys.DeviceID) bool {
	for _, r := range v.relays() {
		if r.dev == d {
			return true
		}
	}
	return false
}

// isPeer reports whether this device syncs vault v with d: a member or a
// relay of the vault.
func (v *vault) isPeer(d keys.DeviceID) bool { return v.roster.IsMember(d) || v.isRelay(d) }

// isPeerAnywhere reports whether d is a member or relay of any vault here.
// trustedPeer says whether p is a member or relay of a vault served here:
// its connections get wide stream windows (p2p.Base.Trusted).
func (n *Node) trustedPeer(p peer.ID) bool {
	d, err := DeviceIDOf(p)
	return err == nil && n.isPeerAnywhere(d)
}

func (n *Node) isPeerAnywhere(d keys.DeviceID) bool {
	for _, v := range n.vaultsNow() {
		if v.isPeer(d) {
			return true
		}
	}
	return false
}

// setRelayQuota records what relay d said about the vault's quota, and
// logs a quota that has just become full.
func (v *vault) setRelayQuota(d keys.DeviceID, q heard.RelayQuota) {
	if v.relayWord.SetQuota(d, q) {
		st := q.Status
		v.log.Warn("relay quota reached: the relay keeps what it has and takes nothing new for this vault",
			"relay", d, "bytes", st.Bytes, "bytes_limit", st.BytesLimit,
			"entries", st.Entries, "entries_limit", st.EntriesLimit)
	}
}

// enroll asks relay p to serve v, sending the vault's membership log.
func (v *vault) enroll(ctx context.Context, p peer.ID, d keys.DeviceID) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := v.agent.newStream(ctx, p, relay.ProtoRelay)
	if err != nil {
		return fmt.Errorf("opening relay stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	c := wire.NewConn(s, v.agent.counters(d))
	recs := v.roster.Records()
	en := wire.Enroll{Vault: v.id, Records: make([][]byte, 0, len(recs))}
	for _, r := range recs {
		en.Records = append(en.Records, r.Encode())
	}
	if err := c.Send(wire.MsgEnroll, en); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	p2, err := c.Expect(wire.MsgRelayStatus)
	if err != nil {
		var we wire.Error
		if errors.As(err, &we) {
			v.setRelayQuota(d, heard.RelayQuota{At: v.now(), Err: we.Reason})
		}
		return fmt.Errorf("enrolling on relay %s: %w", d, err)
	}
	st, err := wire.ParseRelayStatus(p2)
	if err != nil {
		return err
	}
	v.setRelayQuota(d, heard.RelayQuota{Status: st, At: v.now()})
	return nil
}

// syncWithRelay enrolls v on relay p and then pulls its log, retrying
// while the relay stays connected.
func (n *Node) syncWithRelay(ctx context.Context, v *vault, p peer.ID, d keys.DeviceID, kick <-chan struct{}) {
	backoff := pullset.FirstBackoff
	enrolled := false
	for ctx.Err() == nil && n.host.Network().Connectedness(p) == network.Connected && v.isRelay(d) {
		var err error
		if !enrolled {
			err = v.enroll(ctx, p, d)
			enrolled = err == nil
		}
		if enrolled {
			err = v.pullLog(ctx, p, d)
			var we wire.Error
			// The relay lost or dropped the vault: enroll again. A relay
			// answers a vault it does not serve as it answers a stranger
			// (not a member; relays before that said unknown vault), so
			// either means "enroll", and the enrollment says whether
			// this device is refused.
			if errors.As(err, &we) && (we.Code == wire.CodeUnknownVault || we.Code == wire.CodeNotMember) {
				enrolled = false
			}
		}
		if ctx.Err() != nil {
			return
		}
		v.log.Debug("relay stream ended", "relay", d, "err", err)
		if !pullset.Wait(ctx, kick, &backoff, 30*time.Second) {
			return
		}
	}
}

// addRelay records a relay in the vault's membership (admins only).
func (v *vault) addRelay(addr string) error {
	if _, _, err := relay.ParseAddr(addr); err != nil {
		return err
	}
	return v.appendMemberOp(member.Record{Op: member.OpAddRelay, Relay: addr})
}

// removeRelay removes a relay from the vault's membership (admins only).
// addr may be the recorded multiaddr or the relay's peer ID.
func (v *vault) removeRelay(addr string) error {
	for _, r := range v.relays() {
		if r.addr == addr || r.info.ID.String() == addr {
			return v.appendMemberOp(member.Record{Op: member.OpRemoveRelay, Relay: r.addr})
		}
	}
	listed := v.roster.Relays()
	for _, a := range listed {
		if a == addr {
			return v.appendMemberOp(member.Record{Op: member.OpRemoveRelay, Relay: a})
		}
	}
	return fmt.Errorf("relay %q: %w", addr, ErrNoSuchRelay)
}

// ErrNoSuchRelay means a relay to remove is not listed in the vault.
var ErrNoSuchRelay = roster.ErrNoSuchRelay

// ErrNotAdmin means a membership change was asked of a device that is not
// an admin of the vault.
var ErrNotAdmin = roster.ErrNotAdmin

// appendMemberOp signs op as the next membership record and stores it.
func (v *vault) appendMemberOp(op member.Record) error {
	r, err := v.roster.Change(op)
	if err != nil {
		return err
	}
	v.memberApplied(r)
	return nil
}

// multiaddrStrings lists info's addresses as text.
func multiaddrStrings(info peer.AddrInfo) []string {
	out := make([]string, 0, len(info.Addrs))
	for _, a := range info.Addrs {
		out = append(out, a.String())
	}
	return out
}
