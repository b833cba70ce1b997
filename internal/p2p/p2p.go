package p2p

import (
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p"
	coreconnmgr "github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	yamux "github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/security/noise"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	yamuxcfg "github.com/libp2p/go-yamux/v5"

	"github.com/weftsync/weft/protocol/keys"
)

// Key converts a device (or relay) identity into its libp2p host key: the
// same ed25519 key, so the peer ID is the device ID.
func Key(id *keys.Identity) (crypto.PrivKey, error) {
	k, err := crypto.UnmarshalEd25519PrivateKey(id.PrivateKey())
	if err != nil {
		return nil, fmt.Errorf("converting key for libp2p: %w", err)
	}
	return k, nil
}

// PeerIDOf returns the libp2p peer ID of a device or relay.
func PeerIDOf(d keys.DeviceID) (peer.ID, error) {
	pub, err := crypto.UnmarshalEd25519PublicKey(d[:])
	if err != nil {
		return "", fmt.Errorf("device ID as libp2p key: %w", err)
	}
	return peer.IDFromPublicKey(pub)
}

// DeviceIDOf returns the device ID of a libp2p peer, or an error matching
// keys.ErrNotEd25519 if its key is not an ed25519 key (then it cannot be
// a weft device or relay).
func DeviceIDOf(p peer.ID) (keys.DeviceID, error) {
	var d keys.DeviceID
	pub, err := p.ExtractPublicKey()
	if err != nil {
		return d, fmt.Errorf("peer %s: %w", p, err)
	}
	raw, err := pub.Raw()
	if err != nil || pub.Type() != crypto.Ed25519 || len(raw) != len(d) {
		return d, fmt.Errorf("peer %s: %w", p, keys.ErrNotEd25519)
	}
	copy(d[:], raw)
	return d, nil
}

// Base describes what every weft host has in common.
type Base struct {
	Identity *keys.Identity
	// Listen are the addresses the host listens on from the start; with
	// none, it listens on nothing until the caller says (ListenSticky).
	Listen []string
	// Protocols are weft's stream protocols; each gets the Total limit
	// across all peers and PerPeer for each peer, on top of libp2p's
	// defaults (which are far too small for sync's long-lived streams).
	Protocols []p2pprotocol.ID
	Total     rcmgr.BaseLimit
	PerPeer   rcmgr.BaseLimit
	// Override gives some protocols their own limits instead of Total and
	// PerPeer (pairing, which strangers use, gets far fewer streams).
	Override map[p2pprotocol.ID]ProtocolLimits
	// Peer, if not zero, replaces libp2p's default limits of one peer
	// across all its connections and protocols (which grow with the
	// machine's memory: hundreds of MiB on a large one).
	Peer rcmgr.BaseLimit
	// Stranger, if not zero, is where every peer starts instead: libp2p
	// knows identities, not vault membership, so a peer's scope is made
	// with these small limits, and the node raises it to Peer with Admit
	// once it knows the peer is a member or relay of a vault it serves.
	Stranger rcmgr.BaseLimit
	// Gater, if not nil, is consulted on every connection (Bans).
	Gater coreconnmgr.ConnectionGater
	// Trusted, if not nil, names the peers whose connections open streams
	// with StreamWindow (members and relays of the vaults served here);
	// every other peer's streams open with yamux's default window.
	Trusted func(peer.ID) bool
	// ConnLow and ConnHigh are the connection manager's watermarks;
	// connections a caller protects are never trimmed.
	ConnLow, ConnHigh int
}

// ProtocolLimits are one protocol's limits: Total across all peers,
// PerPeer for each peer.
type ProtocolLimits struct{ Total, PerPeer rcmgr.BaseLimit }

// Options returns the libp2p options of b: its identity and listen
// addresses, TCP and QUIC, Noise, yamux, the resource manager with b's
// limits, the connection manager (one minute's grace), and libp2p's own
// metrics off (weft exports its own). Callers append their services.
func (b Base) Options() ([]libp2p.Option, error) {
	priv, err := Key(b.Identity)
	if err != nil {
		return nil, err
	}
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	for _, p := range b.Protocols {
		total, perPeer := b.Total, b.PerPeer
		if o, ok := b.Override[p]; ok {
			total, perPeer = o.Total, o.PerPeer
		}
		limits.AddProtocolLimit(p, total, rcmgr.BaseLimitIncrease{})
		limits.AddProtocolPeerLimit(p, perPeer, rcmgr.BaseLimitIncrease{})
	}
	if b.Peer != (rcmgr.BaseLimit{}) {
		limits.PeerBaseLimit, limits.PeerLimitIncrease = b.Peer, rcmgr.BaseLimitIncrease{}
	}
	if b.Stranger != (rcmgr.BaseLimit{}) {
		limits.PeerBaseLimit, limits.PeerLimitIncrease = b.Stranger, rcmgr.BaseLimitIncrease{}
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits.AutoScale()))
	if err != nil {
		return nil, fmt.Errorf("resource manager: %w", err)
	}
	cm, err := connmgr.NewConnManager(b.ConnLow, b.ConnHigh, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(priv),
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.Transport(quic.NewTransport),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, windowedMuxer{wide: wideMuxer(), trusted: b.Trusted}),
		libp2p.ResourceManager(rm),
		libp2p.ConnectionManager(cm),
		libp2p.DisableMetrics(),
	}
	if len(b.Listen) > 0 {
		opts = append(opts, libp2p.ListenAddrStrings(b.Listen...))
	} else {
		// The caller listens itself once the host is up (ListenSticky).
		opts = append(opts, libp2p.NoListenAddrs)
	}
	if b.Gater != nil {
		opts = append(opts, libp2p.ConnectionGater(b.Gater))
	}
	return opts, nil
}

// StreamWindow is the receive window a new yamux stream starts with on a
// connection to a trusted peer (Base.Trusted: a member or relay of a vault
// served here): what that peer may send on it before hearing back.
// yamux's own start is 256 KiB, growing with the round trip; sync opens a
// stream per want-list of chunks (about 2 MiB), so each fetch began at
// 256 KiB per round trip again: 14.6 MiB/s over a 20 ms round trip,
// measured (docs/benchmarks.md, "B3 over a 20 ms round trip"). At 2 MiB a
// whole want-list is answered in one round trip. yamux charges only its
// own 256 KiB per stream to the resource manager, so a peer that sends
// and is not read could hold the rest: every other peer (a stranger) keeps
// yamux's 256 KiB, and the streams of a trusted one are bounded by its
// stream limits.
const StreamWindow = 2 << 20

// wideMuxer is libp2p's yamux transport with streams opening at
// StreamWindow.
func wideMuxer() *yamux.Transport {
	cfg := *(*yamuxcfg.Config)(yamux.DefaultTransport)
	cfg.InitialStreamWindowSize = StreamWindow
	cfg.MaxStreamWindowSize = max(cfg.MaxStreamWindowSize, StreamWindow)
	return (*yamux.Transport)(&cfg)
}

// windowedMuxer muxes a connection to a trusted peer with wide (streams
// opening at StreamWindow) and any other with libp2p's default yamux. The
// upgrader knows the remote peer before it picks the muxer (security
// comes first), so the choice is made per connection; a peer trusted
// later gets wide windows on its next connection.
type windowedMuxer struct {
	wide    *yamux.Transport
	trusted func(peer.ID) bool
}

func (m windowedMuxer) NewConn(nc net.Conn, isServer bool, scope network.PeerScope) (network.MuxedConn, error) {
	var p peer.ID
	if scope != nil {
		p = scope.Peer()
	}
	return m.transport(p).NewConn(nc, isServer, scope)
}

// transport is the muxer for a connection to p ("" when unknown).
func (m windowedMuxer) transport(p peer.ID) *yamux.Transport {
	if p != "" && m.trusted != nil && m.trusted(p) {
		return m.wide
	}
	return yamux.DefaultTransport
}

// Admit raises the resource limits of peer p, across all its connections,
// to limit: p is a member or relay of a vault served here, no longer held
// to Base.Stranger. It lasts as long as libp2p keeps p's scope (while p
// has a connection, and up to a minute after), so callers admit a peer on
// each new connection. It does nothing when the host's resource manager
// has no adjustable scopes (tests' null resource manager) or p's scope
// already allows at least limit's streams.
func Admit(h host.Host, p peer.ID, limit rcmgr.BaseLimit) {
	_ = h.Network().ResourceManager().ViewPeer(p, func(s network.PeerScope) error {
		l, ok := s.(rcmgr.ResourceScopeLimiter)
		if !ok {
			return nil
		}
		if cur := l.Limit(); cur != nil && cur.GetStreamTotalLimit() >= limit.Streams && cur.GetMemoryLimit() >= limit.Memory {
			return nil
		}
		l.SetLimit(limit)
		return nil
	})
}
