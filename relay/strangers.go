package relay

import (
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol/wire"
)

// Strangers at a relay (docs/security.md, "Strangers"), as at a device
// (node/strangers.go): a stream's first frame is read only up to what its
// message can be, a Hello at most wire.MaxHelloFrame bytes; an opener that
// is not a member of a vault served here gets one answer whether or not
// the relay serves the vault it names; every refusal is counted
// (weft_relay_refused_streams_total) and logged at a bounded rate.
//
// An Enroll comes from a device the relay may not know yet and carries the
// vault's whole membership log (up to wire.MaxEnrollFrame, about 4 MiB),
// so it cannot be held to a few KiB. Instead its memory is reserved in the
// stream's resource scope at low priority before it is read, and
// enrollLimits bound what all such reads may hold: a stranger can make the
// relay hold at most that, never one frame per stream it opens.

var (
	// enrollLimits: a device enrolls once per connection. A reservation
	// at low priority succeeds only while the scope stays within 40% of
	// its limit (libp2p's rule), so these allow one of the largest
	// Enrolls per peer (12 MiB: 4.8 MiB) and three or four at once in all
	// (40 MiB: 16 MiB), or hundreds of typical ones (about 240 bytes a
	// member).
	enrollLimits = p2p.ProtocolLimits{
		Total:   rcmgr.BaseLimit{StreamsInbound: 256, StreamsOutbound: 16, Streams: 256, Memory: 40 << 20},
		PerPeer: rcmgr.BaseLimit{StreamsInbound: 4, StreamsOutbound: 4, Streams: 8, Memory: 12 << 20},
	}
	// recoverLimits: a recovery is one short stream when a person
	// recovers a vault with its phrase; the opener is a stranger until
	// its proof checks (one signature check), and it reads one record.
	recoverLimits = p2p.ProtocolLimits{
		Total:   rcmgr.BaseLimit{StreamsInbound: 32, StreamsOutbound: 8, Streams: 32, Memory: 4 << 20},
		PerPeer: rcmgr.BaseLimit{StreamsInbound: 4, StreamsOutbound: 4, Streams: 8, Memory: 1 << 20},
	}
	// peerLimits hold one identity across its connections and protocols
	// (see node/connect/host.go): a device needs a log and a few chunk streams per
	// vault, an enroll, and the circuits it relays.
	peerLimits = rcmgr.BaseLimit{
		ConnsInbound: 8, ConnsOutbound: 8, Conns: 8, FD: 8,
		StreamsInbound: 256, StreamsOutbound: 256, Streams: 512,
		Memory: 128 << 20,
	}
	// strangerLimits hold every peer until it is known as a member of a
	// served vault (on connection, on an accepted Hello or enrollment):
	// enough for an Enroll of the largest membership log (reserved at low
	// priority: 40% of 16 MiB), a circuit reservation and libp2p's own
	// services, while a stranger's refused streams cost at most 32 yamux
	// windows (8 MiB) at a time.
	strangerLimits = rcmgr.BaseLimit{
		ConnsInbound: 4, ConnsOutbound: 4, Conns: 4, FD: 4,
		StreamsInbound: 32, StreamsOutbound: 32, Streams: 64,
		Memory: 16 << 20,
	}
)

// inboundConn wraps a stream opened by a peer not yet checked: frames
// over wire.MaxHelloFrame are reserved in the stream's resource scope at
// low priority (refused first when memory runs short).
func (r *Relay) inboundConn(s network.Stream) *wire.Conn {
	return r.inboundConnOver(s, r.limit(s))
}

// inboundConnOver is inboundConn over rw, s paced by the relay's rates
// (Relay.limit), so that the caller can apply the vault's rate once the
// Hello names it.
func (r *Relay) inboundConnOver(s network.Stream, rw io.ReadWriter) *wire.Conn {
	c := wire.NewConn(rw, r.stats)
	c.SetMemory(s.Scope(), network.ReservationPriorityLow)
	return c
}

// refuse counts and logs a refused stream, answered already, and closes
// it (the answer still reaches the peer).
func (r *Relay) refuse(s network.Stream, reason string, peer fmt.Stringer, err error) {
	r.refused.Note(string(s.Protocol()), reason, peer.String(), err)
	_ = s.Close()
}

// refuseRead handles an error reading a stream's first message: counted
// when it says something about the peer, and the stream reset (it is out
// of step, the rest of a frame possibly still coming).
//
// A stranger whose first frame is larger than its message can be, or is
// not a weft message, is banned for banFor and disconnected, as at a
// device (node/strangers.go); members of served vaults never are.
func (r *Relay) refuseRead(s network.Stream, peer fmt.Stringer, err error) {
	_ = s.Reset()
	reason := refusal.Classify(err)
	if reason == "" {
		return
	}
	p := s.Conn().RemotePeer()
	if reason == refusal.Oversized || reason == refusal.Malformed || reason == refusal.NotDevice {
		if d, derr := DeviceIDOf(p); derr != nil || len(r.vaultsOf(d)) == 0 {
			if r.bans.Ban(p, banFor) {
				err = fmt.Errorf("%w; disconnected, and its connections refused for %s", err, banFor)
			}
			// What the peerstore learnt of it (its key, protocols)
			// goes too: a stranger per second must not grow it.
			go func() {
				_ = r.host.Network().ClosePeer(p)
				r.host.Peerstore().RemovePeer(p)
			}()
		}
	}
	r.refused.Note(string(s.Protocol()), reason, peer.String(), err)
}

// banFor is how long a relay refuses a stranger it banned.
const banFor = time.Minute
