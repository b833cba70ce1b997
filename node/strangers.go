package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// Strangers: what a device does with peers that are not members of a
// vault it serves (docs/security.md, "Strangers"). Any libp2p identity can
// connect and open streams; before the device knows who it is, it reads at
// most a few KiB (wire.MaxHelloFrame, wire.MaxPairRequestFrame), answers
// every outsider alike, and resets the stream. Pairing and recovery, the
// protocols strangers are meant to use, are rate-limited per identity and
// in total (refusal.Attempts).
// Each refusal is counted (weft_refused_streams_total) and logged at a
// bounded rate (internal/refusal). The resource manager's limits (node/connect/host.go)
// bound how many such streams can be open at once.

// banFor is how long a stranger that sent what no weft peer sends (a
// first frame larger than its message can be, or not a weft message at
// all) is refused: its connections are closed, and new ones refused once
// the handshake names it. Without it, an identity refused stream after
// stream keeps the device decrypting all it sends.
const banFor = time.Minute

// strangers is the node's refusal log, bans and pairing limits.
type strangers struct {
	refused  *refusal.Log
	bans     *p2p.Bans         // the host's connection gater, when the node built the host
	attempts *refusal.Attempts // pairing and recovery attempts
}

func newStrangers(log *slog.Logger) *strangers {
	return &strangers{
		refused:  refusal.New(refusal.Config{Logger: log}),
		bans:     p2p.NewBans(),
		attempts: refusal.NewAttempts(),
	}
}

// admitLimits raises p's resource limits from connect's stranger limits to
// connect.PeerLimits: p is a member or relay of a vault served here, or
// a device this one fetches membership from.
func (n *Node) admitLimits(p peer.ID) { p2p.Admit(n.host, p, connect.PeerLimits) }

// refuse counts and logs a refused stream, answered already (or not at
// all), and closes it: the answer still reaches the peer, and whatever it
// sends after is discarded by the muxer.
func (n *Node) refuse(s network.Stream, reason string, peer fmt.Stringer, err error) {
	n.strangers.refused.Note(string(s.Protocol()), reason, peer.String(), err)
	_ = s.Close()
}

// refuseRead handles an error reading a stream's first message: counted
// and logged when it says something about the peer (refusal.Classify).
// The stream is out of step, with the rest of a frame possibly still
// coming, so it is reset: nothing more is read, and the muxer frees its
// buffers now.
//
// A stranger whose first frame is larger than its message can be, or is
// not a weft message, is banned for banFor and disconnected: no weft
// device sends that. Members are never banned.
func (n *Node) refuseRead(s network.Stream, peer fmt.Stringer, err error) {
	_ = s.Reset()
	reason := refusal.Classify(err)
	if reason == "" {
		return
	}
	if (reason == refusal.Oversized || reason == refusal.Malformed || reason == refusal.NotDevice) && !n.admitted(s.Conn().RemotePeer()) {
		p := s.Conn().RemotePeer()
		if n.strangers.bans.Ban(p, banFor) {
			err = fmt.Errorf("%w; disconnected, and its connections refused for %s", err, banFor)
		}
		// What the peerstore learnt of it (its key, protocols)
		// goes too: a stranger per second must not grow it.
		n.goRun(func(context.Context) {
			_ = n.host.Network().ClosePeer(p)
			n.host.Peerstore().RemovePeer(p)
		})
	}
	n.strangers.refused.Note(string(s.Protocol()), reason, peer.String(), err)
}

// admitted reports whether p is a member or relay of a vault served here,
// or a device this one fetches membership from.
func (n *Node) admitted(p peer.ID) bool {
	d, err := DeviceIDOf(p)
	return err == nil && (n.isPeerAnywhere(d) || n.fetchesMembershipAnywhere(d))
}

// inboundConn wraps a stream opened by a peer not yet checked: no
// traffic counters (a stranger gets no peer state), and large frames
// reserved in the stream's resource scope. Once the peer is admitted the
// caller sets its counters (wire.Conn.SetCounter).
func inboundConn(s network.Stream) *wire.Conn {
	f := wire.NewConn(s, nil)
	f.SetMemory(s.Scope(), network.ReservationPriorityHigh)
	return f
}

// outboundConn wraps a stream this device opened to dev.
func (n *Node) outboundConn(s network.Stream, dev keys.DeviceID) *wire.Conn {
	f := wire.NewConn(s, n.counters(dev))
	f.SetMemory(s.Scope(), network.ReservationPriorityHigh)
	return f
}

// errNotMember is acceptHello's refusal: the opener is not a member or
// relay of the vault it named, or this device does not serve that vault.
var errNotMember = errors.New("not a member of a vault served here")

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
