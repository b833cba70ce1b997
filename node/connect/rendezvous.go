package connect

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	mh "github.com/multiformats/go-multihash"
	"golang.org/x/crypto/hkdf"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
)

// Devices of a vault meet without a relay through weft's own Kademlia DHT
// (protocol prefix relay.DHTPrefix, never the public IPFS DHT): each
// provides the vault's rendezvous names of the current time window and,
// while a member is not connected, looks for other providers of them.
// Providers that are members are connected and remembered; anyone else is
// ignored. Derivation: docs/protocol/keys.md, "Rendezvous names";
// behaviour: docs/connectivity.md, "DHT rendezvous".

// Rendezvous windows and defaults of the rendezvous loop.
const (
	// rendezvousWindow is how long one rendezvous name lives: a UTC day.
	rendezvousWindow = 24 * time.Hour
	// rendezvousOverlap is how close to a window's edge a device also
	// uses the neighbouring window's name, so devices whose clocks
	// disagree by less than this still meet around midnight.
	rendezvousOverlap = time.Hour
	// rendezvousCheckEvery is how often the loop runs: it starts the DHT
	// once there are bootstrap peers, provides what is due, and searches.
	rendezvousCheckEvery = time.Minute
	// rendezvousProvideEvery is how often each name is provided again
	// (provider records on DHT servers are kept for 48 hours, but a
	// restarted server forgets them).
	rendezvousProvideEvery = 30 * time.Minute
	// rendezvousFindEvery is how often a vault with a member that is not
	// connected looks for providers.
	rendezvousFindEvery = 2 * time.Minute
	// rendezvousRetry is the first wait before the next step after a
	// provide failed; it doubles per failure up to the check interval.
	rendezvousRetry = 5 * time.Second
	// rendezvousTimeout bounds one provide, one search, or one dial.
	rendezvousTimeout = 30 * time.Second
	// rendezvousMaxProviders bounds the providers read per search.
	rendezvousMaxProviders = 32
)

// infoRendezvousWindow is the HKDF info prefix of a window's rendezvous
// name; the window number follows in decimal. Part of the format.
const infoRendezvousWindow = "weft/v1 rendezvous-window window="

// rendezvousWindowOf returns the number of the window t falls in: whole
// UTC days since the Unix epoch.
func rendezvousWindowOf(t time.Time) int64 {
	s := t.Unix()
	w := int64(rendezvousWindow / time.Second)
	if s < 0 {
		return (s - w + 1) / w
	}
	return s / w
}

// RendezvousWindows lists the windows a device uses at now: the current
// one first, then the previous one during the first rendezvousOverlap of
// the current window, or the next one during its last rendezvousOverlap.
func RendezvousWindows(now time.Time) []int64 {
	cur := rendezvousWindowOf(now)
	start := time.Unix(cur*int64(rendezvousWindow/time.Second), 0)
	out := []int64{cur}
	if now.Sub(start) < rendezvousOverlap {
		out = append(out, cur-1)
	}
	if start.Add(rendezvousWindow).Sub(now) <= rendezvousOverlap {
		out = append(out, cur+1)
	}
	return out
}

// RendezvousName is the DHT key under which a vault's devices meet during
// window: a CIDv1 (raw codec) of the SHA-256 multihash of
// HKDF-SHA256(rendezvous key, no salt, info = infoRendezvousWindow+window).
// Without the vault's rendezvous key (derived from its root secret) nobody
// can compute a name, tell which vault a name belongs to, or link one
// window's name to another's.
func RendezvousName(key [32]byte, window int64) cid.Cid {
	var name [32]byte
	r := hkdf.New(sha256.New, key[:], nil, []byte(infoRendezvousWindow+strconv.FormatInt(window, 10)))
	if _, err := io.ReadFull(r, name[:]); err != nil {
		panic("connect: invariant: hkdf cannot fail for 32 bytes: " + err.Error())
	}
	sum := sha256.Sum256(name[:])
	m, err := mh.Encode(sum[:], mh.SHA2_256)
	if err != nil {
		panic("connect: invariant: encoding a sha2-256 multihash: " + err.Error())
	}
	return cid.NewCidV1(cid.Raw, m)
}

// Rendezvous runs DHT rendezvous for a device (docs/connectivity.md, "DHT
// rendezvous"). Fill the exported fields and call Run; the timing fields
// may be set (tests) before Run, zero meaning the default. Stats may be
// called from any goroutine.
type Rendezvous struct {
	Host   host.Host
	Self   keys.DeviceID // this device, Host's identity
	Log    *slog.Logger
	Now    func() time.Time
	Server bool // run the DHT in server mode (Config.DHTServer)
	// Bootstrap is the DHT's bootstrap set without this device, asked
	// again on every check (configured peers and every vault's relays: a
	// weft relay is a DHT server).
	Bootstrap func() []peer.AddrInfo
	// Vaults are the vaults this device serves, asked again on every check.
	Vaults func() []RendezvousVault
	// Prefix is the DHT's protocol prefix (relay.DHTPrefix: weft's own
	// DHT, never the public IPFS one).
	Prefix protocol.ID

	CheckEvery, ProvideEvery, FindEvery time.Duration

	mu       sync.Mutex // guards the fields below
	dht      *dht.IpfsDHT
	steps    int              // loop iterations done
	provides int              // successful provides
	ignored  map[peer.ID]bool // providers of a vault's name that are not its members
	met      map[peer.ID]bool // members connected because the DHT named them
}

// RendezvousVault is one vault as rendezvous sees it.
type RendezvousVault interface {
	// RendezvousKey is the vault's rendezvous key
	// (keys.VaultKeys.Rendezvous); it never changes.
	RendezvousKey() [32]byte
	Members() []keys.DeviceID
	IsMember(keys.DeviceID) bool
	// Remember records addresses at which a member was found.
	Remember(keys.DeviceID, []ma.Multiaddr)
	Log() *slog.Logger
}

// RendezvousStats is a copy of what the loop has done, for tests.
type RendezvousStats struct {
	Started  bool
	Steps    int
	Provides int
	Ignored  map[peer.ID]bool
	Met      map[peer.ID]bool
}

// Stats copies what the loop has done so far.
func (r *Rendezvous) Stats() RendezvousStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := RendezvousStats{Started: r.dht != nil, Steps: r.steps, Provides: r.provides, Ignored: map[peer.ID]bool{}, Met: map[peer.ID]bool{}}
	for p := range r.ignored {
		st.Ignored[p] = true
	}
	for p := range r.met {
		st.Met[p] = true
	}
	return st
}

// DHT is the running DHT, or nil before it started (tests).
func (r *Rendezvous) DHT() *dht.IpfsDHT {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dht
}

// ParseBootstrap turns bootstrap multiaddrs (each ending in /p2p/<ID>)
// into address infos, merging addresses of the same peer.
func ParseBootstrap(addrs []string) ([]peer.AddrInfo, error) {
	var ms []ma.Multiaddr
	for _, a := range addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			return nil, fmt.Errorf("bootstrap address %q: %w", a, err)
		}
		ms = append(ms, m)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(ms...)
	if err != nil {
		return nil, fmt.Errorf("bootstrap addresses (each must end in /p2p/<peer ID>): %w", err)
	}
	return infos, nil
}

// Run runs DHT rendezvous until ctx ends. The DHT starts only once there
// is a bootstrap peer; until then nothing is sent, and the log says so
// once at debug level.
func (r *Rendezvous) Run(ctx context.Context) {
	every := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	checkEvery := every(r.CheckEvery, rendezvousCheckEvery)
	provideEvery := every(r.ProvideEvery, rendezvousProvideEvery)
	findEvery := every(r.FindEvery, rendezvousFindEvery)

	bootstrap := r.Bootstrap
	provided := map[cid.Cid]time.Time{}
	searched := map[RendezvousVault]time.Time{}
	saidIdle := false
	var d *dht.IpfsDHT
	defer func() {
		if d != nil {
			_ = d.Close()
		}
	}()

	timer := time.NewTimer(checkEvery)
	defer timer.Stop()
	retryWait := time.Duration(0)
	for {
		retry := false // no routing table or a failed provide: try again sooner
		if d == nil {
			peers := bootstrap()
			if len(peers) == 0 && !saidIdle {
				r.Log.Debug("DHT rendezvous idle: no bootstrap peer and no relay configured, nothing is sent")
				saidIdle = true
			}
			if len(peers) > 0 {
				d = r.startDHT()
			}
		}
		if d != nil {
			r.connectBootstrap(ctx, d, bootstrap())
		}
		if d != nil && d.RoutingTable().Size() == 0 {
			// Identify with the bootstrap peers has not finished, or none
			// of them is a DHT server (a relay run without its DHT).
			retry = true
		} else if d != nil {
			now := r.Now()
			current := map[cid.Cid]bool{}
			for _, v := range r.Vaults() {
				var cids []cid.Cid
				for _, w := range RendezvousWindows(now) {
					c := RendezvousName(v.RendezvousKey(), w)
					cids = append(cids, c)
					current[c] = true
					if last, ok := provided[c]; ok && now.Sub(last) < provideEvery {
						continue
					}
					pctx, cancel := context.WithTimeout(ctx, rendezvousTimeout)
					err := d.Provide(pctx, c, true)
					cancel()
					if err != nil {
						v.Log().Debug("providing rendezvous name", "window", w, "err", err)
						retry = true
						continue
					}
					provided[c] = r.Now()
					r.mu.Lock()
					r.provides++
					r.mu.Unlock()
				}
				if last, ok := searched[v]; (!ok || now.Sub(last) >= findEvery) && r.missingMember(v) {
					searched[v] = now
					for _, c := range cids {
						r.findMembers(ctx, d, v, c)
					}
				}
			}
			for c := range provided {
				if !current[c] {
					delete(provided, c)
				}
			}
		}
		r.mu.Lock()
		r.dht = d
		r.steps++
		r.mu.Unlock()

		// Retry soon, backing off to checkEvery.
		wait := checkEvery
		if retry {
			retryWait = min(max(2*retryWait, rendezvousRetry), checkEvery)
			wait = retryWait
		} else {
			retryWait = 0
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// startDHT starts the device's DHT: weft's prefix, client mode unless
// Server, no value records (weft uses provider records only).
func (r *Rendezvous) startDHT() *dht.IpfsDHT {
	bootstrap := r.Bootstrap
	mode, modeName := dht.ModeClient, "client"
	if r.Server {
		mode, modeName = dht.ModeServer, "server"
	}
	d, err := dht.New(r.Host, dht.Mode(mode), dht.ProtocolPrefix(r.Prefix),
		dht.BootstrapPeersFunc(bootstrap), dht.DisableValues())
	if err != nil {
		r.Log.Warn("DHT rendezvous off", "err", err)
		return nil
	}
	r.Log.Info("DHT rendezvous on", "mode", modeName, "bootstrap", len(bootstrap()))
	return d
}

// connectBootstrap dials the bootstrap peers while the routing table is
// empty. The DHT does this itself only every two minutes; a device that
// just came online, or whose relay just restarted, should not wait.
func (r *Rendezvous) connectBootstrap(ctx context.Context, d *dht.IpfsDHT, peers []peer.AddrInfo) {
	if d.RoutingTable().Size() > 0 {
		return
	}
	for _, p := range peers {
		if r.Host.Network().Connectedness(p.ID) == network.Connected {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, rendezvousTimeout)
		err := r.Host.Connect(cctx, p)
		cancel()
		if err != nil {
			r.Log.Debug("connecting to DHT bootstrap peer", "peer", p.ID, "err", err)
		}
	}
}

// missingMember reports whether a member of v other than this device is
// not connected.
func (r *Rendezvous) missingMember(v RendezvousVault) bool {
	for _, dev := range v.Members() {
		if dev == r.Self {
			continue
		}
		pid, err := p2p.PeerIDOf(dev)
		if err == nil && r.Host.Network().Connectedness(pid) != network.Connected {
			return true
		}
	}
	return false
}

// findMembers looks up the providers of name and connects to those that
// are members of v, at the addresses the DHT returns, remembering them for
// the dial loop (DialLoop). Providers that are not members are ignored: they are never
// dialled, and nothing of theirs is remembered.
func (r *Rendezvous) findMembers(ctx context.Context, d *dht.IpfsDHT, v RendezvousVault, name cid.Cid) {
	fctx, cancel := context.WithTimeout(ctx, rendezvousTimeout)
	defer cancel()
	for pi := range d.FindProvidersAsync(fctx, name, rendezvousMaxProviders) {
		if pi.ID == r.Host.ID() {
			continue
		}
		dev, err := p2p.DeviceIDOf(pi.ID)
		if err != nil || !v.IsMember(dev) {
			r.mu.Lock()
			if r.ignored == nil {
				r.ignored = map[peer.ID]bool{}
			}
			first := !r.ignored[pi.ID]
			r.ignored[pi.ID] = true
			r.mu.Unlock()
			if first {
				v.Log().Debug("ignoring a rendezvous provider that is not a member", "peer", pi.ID)
			}
			continue
		}
		if r.Host.Network().Connectedness(pi.ID) == network.Connected {
			continue
		}
		cctx, ccancel := context.WithTimeout(ctx, rendezvousTimeout)
		err = r.Host.Connect(cctx, pi)
		ccancel()
		if err != nil {
			v.Log().Debug("connecting to a member found in the DHT", "peer", dev, "err", err)
			continue
		}
		v.Log().Info("met a member through the DHT", "peer", dev)
		r.mu.Lock()
		if r.met == nil {
			r.met = map[peer.ID]bool{}
		}
		r.met[pi.ID] = true
		r.mu.Unlock()
		if len(pi.Addrs) > 0 {
			v.Remember(dev, pi.Addrs)
		}
	}
}
