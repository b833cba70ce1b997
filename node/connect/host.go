package connect

import (
	"fmt"
	"io"
	"log/slog"
	"maps"

	"github.com/libp2p/go-libp2p"
	coreconnmgr "github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// DefaultListenAddrs are used when the configuration names none: every
// interface, IPv4 and IPv6, TCP and QUIC, on a port the OS picks at the
// first start and kept after that (HostConfig.Ports). A host without IPv6
// listens on IPv4 only.
var DefaultListenAddrs = []string{
	"/ip4/0.0.0.0/tcp/0",
	"/ip4/0.0.0.0/udp/0/quic-v1",
	"/ip6/::/tcp/0",
	"/ip6/::/udp/0/quic-v1",
}

// PortBook keeps the ports a device listened on at its last start
// (home.Home does, in its home directory).
type PortBook interface {
	ListenPorts() (map[string]int, error)
	SetListenPorts(map[string]int) error
}

// HostConfig is what NewHost and HostOptions need.
type HostConfig struct {
	Identity    *keys.Identity
	ListenAddrs []string
	// Punches, if set, is told of every hole punch (DCUtR) the host
	// makes, so the node can report a connection as holepunched. Give the
	// same tracer to Config.Punches when the node runs on this host.
	Punches *PunchTracer
	// Gater, if set, is consulted on every connection: the node's bans
	// of strangers (node/strangers.go).
	Gater *p2p.Bans
	// Ports, if set, makes the listen ports sticky: an address with port
	// 0 listens on the port it got at the last start when that port is
	// free, and the ports got are recorded for the next one
	// (p2p.ListenSticky; docs/connectivity.md, "Listen ports"). FreshPorts
	// ignores the record (and replaces it).
	Ports      PortBook
	FreshPorts bool
	// Log receives what listening could not do (nil: discarded).
	Log *slog.Logger
	// Trusted, if set, names the peers whose streams open with a wide
	// receive window (p2p.StreamWindow): the node's members and relays.
	Trusted func(peer.ID) bool
}

// Resource limits for what strangers can reach (docs/security.md,
// "Strangers"). libp2p's resource manager knows peers, not vault
// membership, so the limits hold every identity; they are sized for
// members, which need few streams, and bound strangers, which before the
// Hello check cost a stream each (its yamux window, 256 KiB reserved in
// the connection's scope, and at most wire.MaxHelloFrame bytes read).
var (
	// pairLimits: pairing is a stream or two when a device joins. A few
	// at once per identity (a stream's resources are freed only once both
	// sides closed it, so quick retries overlap), 32 in all; each carries
	// one request of at most wire.MaxPairRequestFrame bytes, and its
	// attempts are rate-limited (node/strangers.go). Recovery
	// (/weft/recover/1) is as rare and shares the same limits.
	pairLimits = p2p.ProtocolLimits{
		Total:   rcmgr.BaseLimit{StreamsInbound: 32, StreamsOutbound: 32, Streams: 64, Memory: 4 << 20},
		PerPeer: rcmgr.BaseLimit{StreamsInbound: 8, StreamsOutbound: 8, Streams: 16, Memory: 1 << 20},
	}
	// PeerLimits hold one identity across its connections and
	// protocols, instead of libp2p's defaults that grow with the
	// machine's memory: its connections (8, as libp2p's default), its
	// streams (a member needs a log and a few chunk streams per shared
	// vault, plus libp2p's own services) and the memory reserved for
	// them (yamux windows and frames over wire.MaxHelloFrame).
	PeerLimits = rcmgr.BaseLimit{
		ConnsInbound: 8, ConnsOutbound: 8, Conns: 8, FD: 8,
		StreamsInbound: 128, StreamsOutbound: 256, Streams: 384,
		Memory: 128 << 20,
	}
	// strangerLimits hold every peer until the node admits it (a member
	// or relay of a vault served here: admitLimits, on each connection
	// and when pairing admits a device). A stranger needs little: a
	// pairing stream, libp2p's identify, ping and AutoNAT. 16 streams at
	// once, whose yamux windows (256 KiB each, reserved in the
	// connection's scope) stay within its 8 MiB: an identity refused
	// after its first frame can make the device hold about 4 MiB at a
	// time, not one 8 MiB frame per stream it opens.
	strangerLimits = rcmgr.BaseLimit{
		ConnsInbound: 4, ConnsOutbound: 4, Conns: 4, FD: 4,
		StreamsInbound: 16, StreamsOutbound: 16, Streams: 32,
		Memory: 8 << 20,
	}
)

// gater returns b as a connection gater, or nil (no gater) when b is nil.
func gater(b *p2p.Bans) coreconnmgr.ConnectionGater {
	if b == nil {
		return nil
	}
	return b
}

// NewHost builds the device's libp2p host from HostOptions.
func NewHost(cfg HostConfig) (host.Host, error) {
	opts, err := HostOptions(cfg)
	if err != nil {
		return nil, err
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("starting libp2p host: %w", err)
	}
	if cfg.Ports != nil {
		if err := listenSticky(h, cfg); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// listenSticky makes h listen on cfg's addresses, on the ports of the
// last start where they are free, and records the ports for the next.
// Not reading or not writing the record costs only the stickiness: the
// host listens where the system says, and the error is logged.
func listenSticky(h host.Host, cfg HostConfig) error {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	listen := listenAddrs(cfg)
	var last map[string]int
	if !cfg.FreshPorts {
		var err error
		if last, err = cfg.Ports.ListenPorts(); err != nil {
			log.Warn("reading the listen ports of the last start; listening on new ones", "err", err)
		}
	}
	got, failed, err := p2p.ListenSticky(h.Network(), listen, last, p2p.TCPPortTaken)
	if err != nil {
		return fmt.Errorf("starting libp2p host: %w", err)
	}
	for _, err := range failed {
		log.Info("not listening on an address", "err", err)
	}
	for addr, port := range last {
		if p, ok := got[addr]; ok && p != port {
			log.Warn("the listen port of the last start is taken; peers learn the new one when they connect", "addr", addr, "was", port, "now", p)
		}
	}
	if !maps.Equal(got, last) {
		if err := cfg.Ports.SetListenPorts(got); err != nil {
			log.Warn("recording the listen ports for the next start", "err", err)
		}
	}
	return nil
}

// listenAddrs returns cfg's listen addresses, or the defaults.
func listenAddrs(cfg HostConfig) []string {
	if len(cfg.ListenAddrs) == 0 {
		return DefaultListenAddrs
	}
	return cfg.ListenAddrs
}

// HostOptions is the option list of a device's libp2p host: TCP and QUIC,
// Noise, yamux, a resource manager sized for sync (many streams to a few
// peers), a connection manager, and NAT traversal (docs/connectivity.md):
//
//   - the circuit v2 relay client transport (libp2p's default), so the
//     device can dial and be dialled through a relay it holds a
//     reservation on (Reservations);
//   - hole punching (DCUtR), which turns a relayed connection into a
//     direct one when both sides' NATs allow it, reported to cfg.Punches;
//   - the AutoNAT v2 client, so the host learns which of its addresses
//     are reachable from outside.
//
// Identify runs in every libp2p host. There are no public bootstrap peers
// and no UPnP/NAT-PMP port mapping (libp2p.NATPortMap stays off): a device
// does not reconfigure the user's router. Callers may append options, for
// example a simulated QUIC transport in tests; libp2p applies them in order.
func HostOptions(cfg HostConfig) ([]libp2p.Option, error) {
	listen := listenAddrs(cfg)
	if cfg.Ports != nil {
		listen = nil // NewHost listens, once the host is up (listenSticky)
	}
	// Sync keeps a few long-lived streams per peer (log, chunk want-lists)
	// and opens short ones for pairing; a few dozen per peer is plenty.
	// Relay and member connections are protected from trimming
	// (node's protectConn); the watermarks only bound everything else.
	opts, err := p2p.Base{
		Identity:  cfg.Identity,
		Listen:    listen,
		Protocols: []p2pprotocol.ID{wire.ProtoLog, wire.ProtoChunk, wire.ProtoPair, wire.ProtoRecover},
		Total:     rcmgr.BaseLimit{StreamsInbound: 256, StreamsOutbound: 256, Streams: 512, Memory: 256 << 20},
		PerPeer:   rcmgr.BaseLimit{StreamsInbound: 32, StreamsOutbound: 32, Streams: 64, Memory: 64 << 20},
		Override:  map[p2pprotocol.ID]p2p.ProtocolLimits{wire.ProtoPair: pairLimits, wire.ProtoRecover: pairLimits},
		Peer:      PeerLimits,
		Stranger:  strangerLimits,
		Gater:     gater(cfg.Gater),
		Trusted:   cfg.Trusted,
		ConnLow:   64, ConnHigh: 128,
	}.Options()
	if err != nil {
		return nil, err
	}
	var punchOpts []holepunch.Option
	if cfg.Punches != nil {
		punchOpts = append(punchOpts, holepunch.WithTracer(cfg.Punches))
	}
	return append(opts,
		libp2p.EnableRelay(),
		libp2p.EnableHolePunching(punchOpts...),
		libp2p.EnableAutoNATv2(),
	), nil
}
