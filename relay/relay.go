package relay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/internal/pullset"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/pack"
)

// Stream protocols a relay speaks, as libp2p IDs.
const (
	ProtoLog   p2pprotocol.ID = wire.ProtoLog
	ProtoChunk p2pprotocol.ID = wire.ProtoChunk
	ProtoRelay p2pprotocol.ID = wire.ProtoRelay
	// ProtoRecover: a holder of a vault's recovery phrase joins it
	// (recover.go).
	ProtoRecover p2pprotocol.ID = wire.ProtoRecover
)

// DHTPrefix is the protocol prefix of weft's own Kademlia DHT: it is not
// the public IPFS DHT, so weft nodes never join or answer that one.
const DHTPrefix = "/weft"

// DefaultListenAddrs are a relay's listen addresses unless configured:
// every interface, the conventional libp2p port 4001, TCP and QUIC.
var DefaultListenAddrs = []string{
	"/ip4/0.0.0.0/tcp/4001",
	"/ip4/0.0.0.0/udp/4001/quic-v1",
}

// DefaultMaxVaults bounds the vaults one relay serves unless configured, so
// a stranger who lists this relay in a vault of their own cannot make it
// store without end. Quotas bound each vault.
const DefaultMaxVaults = 100

// Config is what New needs.
type Config struct {
	// Home is the relay's directory: its key and every replica.
	Home string
	// ListenAddrs are multiaddrs to listen on; nil means DefaultListenAddrs.
	ListenAddrs []string
	// Quota bounds each vault; the zero value means DefaultQuota. Use
	// NoQuota for none.
	Quota Quota
	// NoQuota turns per-vault quotas off.
	NoQuota bool
	// Allow, when not empty, is the only vaults this relay serves.
	Allow []keys.VaultID
	// MaxVaults bounds the vaults served; 0 means DefaultMaxVaults.
	MaxVaults int
	// Circuit limits each relayed connection (DCUtR signalling needs
	// little); nil means libp2p's default (2 minutes, 128 KiB each way).
	// Data between devices that cannot connect directly goes through the
	// relay's store, not through a circuit.
	Circuit *relayv2.RelayLimit
	// Bootstrap are other DHT servers to join; a relay needs none.
	Bootstrap []peer.AddrInfo
	// Host replaces the libp2p host (simulations); New does not close it.
	Host host.Host
	// NoDHT leaves the DHT server off (simulations with many relays).
	NoDHT bool
	// Logger receives the relay's log; nil discards it.
	Logger *slog.Logger
	// Retention says which old versions each vault keeps (retention.go);
	// the zero value means DefaultRetention.
	Retention Retention
	// GCInterval is how often each vault's unreferenced chunks are
	// collected (gc.go); 0 means DefaultGCInterval.
	GCInterval time.Duration
	// Now is the clock retention is judged by; nil means time.Now.
	Now func() time.Time
	// Scrub paces the background re-verification of every stored chunk
	// (scrub.go); the zero value means a pass a week
	// (pack.DefaultScrubPeriod) within pack.DefaultScrubBudget.
	Scrub pack.ScrubPace
	// NoScrub turns the background scrub off. ScrubNow still works.
	NoScrub bool
	// Chunks opens each vault's chunk store; nil means PackChunks (pack
	// files on the relay's disk). S3Chunks keeps them in object storage.
	Chunks ChunkStores
	// Rates bounds the bytes moved on weft streams, per vault and in
	// total (ratelimit.go); the zero value means no limit.
	Rates Rates
}

// Relay is a running relay. Create it with New, then Run.
type Relay struct {
	cfg     Config
	log     *slog.Logger
	id      *keys.Identity
	host    host.Host
	ownHost bool
	dht     *dht.IpfsDHT
	stats   *stats
	refused *refusal.Log // streams refused to peers not admitted (strangers.go)
	// attempts limits strangers' recovery attempts, per identity and in
	// total, as a device limits pairing and recovery.
	attempts *refusal.Attempts
	bans     *p2p.Bans // strangers refused for a while (strangers.go)

	loops sync.WaitGroup // fetch, GC, idle and scrub loops

	scrubMu sync.Mutex // one scrub step or ScrubNow at a time, across vaults

	gcMu    sync.Mutex                          // one vault's GC at a time
	afterGC func(keys.VaultID, gcResult, error) // tests: told after each GC run

	mu      sync.Mutex
	ctx     context.Context // set by Run
	vaults  map[keys.VaultID]*replica
	dropped map[keys.VaultID]bool // by the operator (drop.go): refused
	// limiters pace each vault's streams (Config.Rates.PerVault), total
	// all of them (ratelimit.go).
	limiters map[keys.VaultID]*limiter
	total    *limiter
	closed   bool
	// stopping is set once Run's context has ended: goRun starts nothing
	// more, and Run waits for work.
	stopping bool

	// work is every goroutine goRun started (the log pullers, the work
	// after a connection); Run waits for it before it returns.
	work sync.WaitGroup
	// pullers is the one log puller of each vault and device (startPull).
	pullers pullset.Set[pullKey]
}

type pullKey struct {
	vault keys.VaultID
	peer  peer.ID
}

// New opens the relay's home (creating its key on first use), every
// replica in it, and its libp2p host.
func New(cfg Config) (*Relay, error) {
	if cfg.Home == "" {
		return nil, errors.New("relay: no home directory")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NoQuota {
		cfg.Quota = Quota{}
	} else if cfg.Quota == (Quota{}) {
		cfg.Quota = DefaultQuota
	}
	if cfg.Chunks == nil {
		cfg.Chunks = PackChunks
	}
	if cfg.MaxVaults == 0 {
		cfg.MaxVaults = DefaultMaxVaults
	}
	h, err := home.Open(cfg.Home)
	if err != nil {
		return nil, fmt.Errorf("relay home: %w", err)
	}
	cfg.Home = h.Dir
	id, err := h.Identity()
	if err != nil {
		return nil, fmt.Errorf("relay key: %w", err)
	}
	r := &Relay{
		cfg: cfg, log: cfg.Logger, id: id, stats: newStats(), refused: refusal.New(refusal.Config{Logger: cfg.Logger}), attempts: refusal.NewAttempts(), bans: p2p.NewBans(),
		vaults:   map[keys.VaultID]*replica{},
		limiters: map[keys.VaultID]*limiter{}, total: newLimiter(cfg.Rates.Total),
	}
	r.stats.reg.MustRegister(r.refused.Collector("weft_relay_refused_streams_total"))
	if r.dropped, err = readDropped(cfg.Home); err != nil {
		return nil, err
	}
	if err := r.openReplicas(); err != nil {
		r.closeReplicas()
		return nil, err
	}
	if cfg.Host != nil {
		r.host = cfg.Host
	} else {
		r.host, err = r.newHost()
		if err != nil {
			r.closeReplicas()
			return nil, err
		}
		r.ownHost = true
	}
	return r, nil
}

// openReplicas opens every replica found in the home.
func (r *Relay) openReplicas() error {
	dir := filepath.Join(r.cfg.Home, "replicas")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing replicas: %w", err)
	}
	for _, e := range ents {
		b, err := hex.DecodeString(e.Name())
		if err != nil || len(b) != len(keys.VaultID{}) || !e.IsDir() {
			continue
		}
		var id keys.VaultID
		copy(id[:], b)
		if r.dropped[id] {
			// A drop that did not finish (a crash, a failed delete):
			// finish it now rather than serve the vault again.
			if err := DropInHome(r.cfg.Home, id, false, r.cfg.Chunks, r.log); err != nil {
				r.log.Warn("finishing the drop of a vault", "vault", id, "err", err)
			}
			continue
		}
		rep, err := openReplica(r.cfg.Home, id, r.cfg.Quota, r.cfg.Chunks, r.log, r.stats)
		if err != nil {
			return err
		}
		r.vaults[id] = rep
	}
	return nil
}

func (r *Relay) closeReplicas() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, rep := range r.vaults {
		rep.close()
	}
}

// ID is the relay's peer ID.
func (r *Relay) ID() peer.ID { return r.host.ID() }

// Host is the relay's libp2p host.
func (r *Relay) Host() host.Host { return r.host }

// Addrs returns the relay's listen multiaddrs with /p2p/<ID>, the form
// devices record with `weft relay add`.
func (r *Relay) Addrs() []string {
	var out []string
	for _, a := range r.host.Addrs() {
		out = append(out, a.Encapsulate(ma.StringCast("/p2p/"+r.host.ID().String())).String())
	}
	slices.Sort(out)
	return out
}

// newHost builds the relay's libp2p host: TCP and QUIC, Noise, yamux, the
// resource manager, a connection manager sized for many devices, the
// circuit relay v2 service (open only to members of served vaults), and
// AutoNAT services so devices learn whether they are reachable. The relay
// declares itself publicly reachable: it is run where devices can dial it.
func (r *Relay) newHost() (host.Host, error) {
	listen := r.cfg.ListenAddrs
	if len(listen) == 0 {
		listen = DefaultListenAddrs
	}
	// A relay talks to many devices at once: far more streams in total
	// than a device, the same per peer.
	opts, err := p2p.Base{
		Identity:  r.id,
		Listen:    listen,
		Protocols: []p2pprotocol.ID{ProtoLog, ProtoChunk, ProtoRelay, ProtoRecover},
		Total:     rcmgr.BaseLimit{StreamsInbound: 4096, StreamsOutbound: 4096, Streams: 8192, Memory: 512 << 20},
		PerPeer:   rcmgr.BaseLimit{StreamsInbound: 32, StreamsOutbound: 32, Streams: 64, Memory: 64 << 20},
		Override:  map[p2pprotocol.ID]p2p.ProtocolLimits{ProtoRelay: enrollLimits, ProtoRecover: recoverLimits},
		Peer:      peerLimits,
		Stranger:  strangerLimits,
		Gater:     r.bans,
		ConnLow:   900, ConnHigh: 1000,
	}.Options()
	if err != nil {
		return nil, err
	}
	res := relayv2.DefaultResources()
	if r.cfg.Circuit != nil {
		res.Limit = r.cfg.Circuit
	}
	h, err := libp2p.New(append(opts,
		libp2p.ForceReachabilityPublic(),
		libp2p.EnableRelayService(
			relayv2.WithResources(res),
			relayv2.WithACL(acl{r}),
			// Devices on a LAN or behind a VPN are served too; a
			// reservation's addresses are only hints.
			relayv2.WithReservationAddressFilter(func(ma.Multiaddr) bool { return true }),
			relayv2.WithMetricsTracer(r.stats.circuit),
		),
		libp2p.EnableNATService(),
		libp2p.EnableAutoNATv2(),
	)...)
	if err != nil {
		return nil, fmt.Errorf("starting libp2p host: %w", err)
	}
	return h, nil
}

// acl opens the circuit relay service to the members of served vaults
// only: a reservation needs a member, a circuit needs two devices that
// share a vault.
type acl struct{ r *Relay }

func (a acl) AllowReserve(p peer.ID, _ ma.Multiaddr) bool {
	d, err := DeviceIDOf(p)
	return err == nil && len(a.r.vaultsOf(d)) > 0
}

func (a acl) AllowConnect(src peer.ID, _ ma.Multiaddr, dst peer.ID) bool {
	s, err1 := DeviceIDOf(src)
	d, err2 := DeviceIDOf(dst)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, rep := range a.r.vaultsOf(s) {
		if rep.isMember(d) {
			return true
		}
	}
	return false
}

// vaultsListingRelay lists the served vaults whose membership lists p as
// another relay.
func (r *Relay) vaultsListingRelay(p peer.ID) []*replica {
	r.mu.Lock()
	reps := make([]*replica, 0, len(r.vaults))
	for _, rep := range r.vaults {
		reps = append(reps, rep)
	}
	r.mu.Unlock()
	var out []*replica
	for _, rep := range reps {
		if r.isPeerRelay(rep, p) && Listed(rep.relays(), r.host.ID()) {
			out = append(out, rep)
		}
	}
	return out
}

// vaultsOf lists the served vaults d is a member of.
func (r *Relay) vaultsOf(d keys.DeviceID) []*replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*replica
	for _, rep := range r.vaults {
		if rep.isMember(d) && Listed(rep.relays(), r.host.ID()) {
			out = append(out, rep)
		}
	}
	return out
}

// replicaCtx is rep's context (nil before Run started its loops).
func (r *Relay) replicaCtx(rep *replica) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return rep.ctx
}

// replica returns the served replica of vault id, or nil.
func (r *Relay) replica(id keys.VaultID) *replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.vaults[id]
}

// Run serves until ctx ends and returns nil after a clean shutdown.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer r.closeReplicas()
	defer r.refused.Close()
	if r.ownHost {
		defer r.host.Close()
	}
	if !r.cfg.NoDHT {
		d, err := dht.New(r.host, dht.Mode(dht.ModeServer), dht.ProtocolPrefix(DHTPrefix),
			dht.BootstrapPeers(r.cfg.Bootstrap...))
		if err != nil {
			return fmt.Errorf("starting DHT server: %w", err)
		}
		defer d.Close()
		r.dht = d
	}
	r.host.SetStreamHandler(ProtoRelay, r.handleEnroll)
	r.host.SetStreamHandler(ProtoLog, r.handleLog)
	r.host.SetStreamHandler(ProtoChunk, r.handleChunk)
	r.host.SetStreamHandler(ProtoRecover, r.handleRecover)
	defer r.host.RemoveStreamHandler(ProtoRelay)
	defer r.host.RemoveStreamHandler(ProtoLog)
	defer r.host.RemoveStreamHandler(ProtoChunk)
	notifee := &network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			p := c.RemotePeer()
			r.goRun(func(context.Context) { r.onConnected(p) })
		},
		DisconnectedF: func(_ network.Network, c network.Conn) { r.stats.devicesChanged(r) },
	}
	r.host.Network().Notify(notifee)
	defer r.host.Network().StopNotify(notifee)

	r.mu.Lock()
	r.ctx = ctx
	for _, rep := range r.vaults {
		r.startFetchLocked(rep)
	}
	r.mu.Unlock()
	for _, p := range r.host.Network().Peers() {
		r.goRun(func(context.Context) { r.onConnected(p) })
	}
	r.loops.Go(func() { r.idleLoop(ctx) })
	if !r.cfg.NoScrub {
		r.loops.Go(func() { r.scrubLoop(ctx) })
	}
	<-ctx.Done()
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.work.Wait()
	r.loops.Wait()
	return nil
}

// goRun runs f on a goroutine Run waits for, with Run's context, and
// reports whether it did: before Run and once it is stopping it starts
// nothing. Work that begins outside Run's own goroutines (a connection
// notice, an enrollment) gets an owner this way.
func (r *Relay) goRun(f func(ctx context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.stopping {
		return false
	}
	ctx := r.ctx
	r.work.Go(func() { f(ctx) })
	return true
}

// startFetchLocked starts rep's chunk fetcher and garbage collector once
// Run has started.
func (r *Relay) startFetchLocked(rep *replica) {
	if r.ctx == nil {
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	rep.ctx, rep.cancelLoops = ctx, cancel
	rep.loops.Go(func() { r.fetchLoop(ctx, rep) })
	rep.loops.Go(func() { r.gcLoop(ctx, rep) })
	rep.loops.Go(func() { r.relayPeersLoop(ctx, rep) })
	r.loops.Go(rep.loops.Wait) // Run waits for every replica's loops
}

// context returns Run's context, or nil before Run.
func (r *Relay) context() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx
}
