package node

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	mh "github.com/multiformats/go-multihash"
	"golang.org/x/crypto/hkdf"

	"github.com/weftsync/weft/relay"
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

// rendezvousWindows lists the windows a device uses at now: the current
// one first, then the previous one during the first rendezvousOverlap of
// the current window, or the next one during its last rendezvousOverlap.
func rendezvousWindows(now time.Time) []int64 {
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

// rendezvousName is the DHT key under which a vault's devices meet during
// window: a CIDv1 (raw codec) of the SHA-256 multihash of
// HKDF-SHA256(rendezvous key, no salt, info = infoRendezvousWindow+window).
// Without the vault's rendezvous key (derived from its root secret) nobody
// can compute a name, tell which vault a name belongs to, or link one
// window's name to another's.
func rendezvousName(key [32]byte, window int64) cid.Cid {
	var name [32]byte
	r := hkdf.New(sha256.New, key[:], nil, []byte(infoRendezvousWindow+strconv.FormatInt(window, 10)))
	if _, err := io.ReadFull(r, name[:]); err != nil {
		panic("node: invariant: hkdf cannot fail for 32 bytes: " + err.Error())
	}
	sum := sha256.Sum256(name[:])
	m, err := mh.Encode(sum[:], mh.SHA2_256)
	if err != nil {
		panic("node: invariant: encoding a sha2-256 multihash: " + err.Error())
	}
	return cid.NewCidV1(cid.Raw, m)
}

// rendezvous is the node's DHT rendezvous state. The timing fields may be
// set (tests) before Run; zero means the default. The rest belongs to
// rendezvousLoop.
type rendezvous struct {
	checkEvery, provideEvery, findEvery time.Duration

	mu       sync.Mutex // guards the fields below
	dht      *dht.IpfsDHT
	steps    int              // loop iterations done
	provides int              // successful provides
	ignored  map[peer.ID]bool // providers of a vault's name that are not its members
	met      map[peer.ID]bool // members connected because the DHT named them
}

// rendezvousStats is a copy of what the loop has done, for tests.
type rendezvousStats struct {
	started  bool
	steps    int
	provides int
	ignored  map[peer.ID]bool
	met      map[peer.ID]bool
}

func (r *rendezvous) stats() rendezvousStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := rendezvousStats{started: r.dht != nil, steps: r.steps, provides: r.provides, ignored: map[peer.ID]bool{}, met: map[peer.ID]bool{}}
	for p := range r.ignored {
		st.ignored[p] = true
	}
	for p := range r.met {
		st.met[p] = true
	}
	return st
}

// parseBootstrap turns bootstrap multiaddrs (each ending in /p2p/<ID>)
// into address infos, merging addresses of the same peer.
func parseBootstrap(addrs []string) ([]peer.AddrInfo, error) {
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

// rendezvousPeers is the DHT's bootstrap set: Config.Bootstrap and every
// vault's relays (a weft relay is a DHT server), without this device.
func (n *Node) rendezvousPeers(static []peer.AddrInfo) []peer.AddrInfo {
	seen := map[peer.ID]bool{n.host.ID(): true}
	var out []peer.AddrInfo
	add := func(i peer.AddrInfo) {
		if !seen[i.ID] {
			seen[i.ID] = true
			out = append(out, i)
		}
	}
	for _, i := range static {
		add(i)
	}
	for _, v := range n.vaultsNow() {
		for _, r := range v.relays() {
			add(r.info)
		}
	}
	return out
}

// rendezvousLoop runs DHT rendezvous until ctx ends (docs/connectivity.md,
// "DHT rendezvous"). With Config.NoDHT it returns at once. The DHT starts
// only once there is a bootstrap peer (Config.Bootstrap or a vault relay);
// until then nothing is sent, and the log says so once at debug level.
func (n *Node) rendezvousLoop(ctx context.Context) {
	if n.cfg.NoDHT {
		return
	}
	r := &n.rdv
	every := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	checkEvery := every(r.checkEvery, rendezvousCheckEvery)
	provideEvery := every(r.provideEvery, rendezvousProvideEvery)
	findEvery := every(r.findEvery, rendezvousFindEvery)

	static, _ := parseBootstrap(n.cfg.Bootstrap) // New checked them
	bootstrap := func() []peer.AddrInfo { return n.rendezvousPeers(static) }
	names := map[*vault][32]byte{}
	for _, v := range n.vaultsNow() {
		names[v] = v.rendezvousKey()
	}
	provided := map[cid.Cid]time.Time{}
	searched := map[*vault]time.Time{}
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
				n.log.Debug("DHT rendezvous idle: no bootstrap peer and no relay configured, nothing is sent")
				saidIdle = true
			}
			if len(peers) > 0 {
				d = n.startDHT(bootstrap)
			}
		}
		if d != nil {
			n.connectBootstrap(ctx, d, bootstrap())
		}
		if d != nil && d.RoutingTable().Size() == 0 {
			// Identify with the bootstrap peers has not finished, or none
			// of them is a DHT server (a relay run without its DHT).
			retry = true
		} else if d != nil {
			now := n.now()
			current := map[cid.Cid]bool{}
			for _, v := range n.vaultsNow() {
				var cids []cid.Cid
				for _, w := range rendezvousWindows(now) {
					c := rendezvousName(names[v], w)
					cids = append(cids, c)
					current[c] = true
					if last, ok := provided[c]; ok && now.Sub(last) < provideEvery {
						continue
					}
					pctx, cancel := context.WithTimeout(ctx, rendezvousTimeout)
					err := d.Provide(pctx, c, true)
					cancel()
					if err != nil {
						v.log.Debug("providing rendezvous name", "window", w, "err", err)
						retry = true
						continue
					}
					provided[c] = n.now()
					r.mu.Lock()
					r.provides++
					r.mu.Unlock()
				}
				if last, ok := searched[v]; (!ok || now.Sub(last) >= findEvery) && n.missingMember(v) {
					searched[v] = now
					for _, c := range cids {
						n.findMembers(ctx, d, v, c)
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
// Config.DHTServer, no value records (weft uses provider records only).
func (n *Node) startDHT(bootstrap func() []peer.AddrInfo) *dht.IpfsDHT {
	mode, modeName := dht.ModeClient, "client"
	if n.cfg.DHTServer {
		mode, modeName = dht.ModeServer, "server"
	}
	d, err := dht.New(n.host, dht.Mode(mode), dht.ProtocolPrefix(relay.DHTPrefix),
		dht.BootstrapPeersFunc(bootstrap), dht.DisableValues())
	if err != nil {
		n.log.Warn("DHT rendezvous off", "err", err)
		return nil
	}
	n.log.Info("DHT rendezvous on", "mode", modeName, "bootstrap", len(bootstrap()))
	return d
}

// connectBootstrap dials the bootstrap peers while the routing table is
// empty. The DHT does this itself only every two minutes; a device that
// just came online, or whose relay just restarted, should not wait.
func (n *Node) connectBootstrap(ctx context.Context, d *dht.IpfsDHT, peers []peer.AddrInfo) {
	if d.RoutingTable().Size() > 0 {
		return
	}
	for _, p := range peers {
		if n.host.Network().Connectedness(p.ID) == network.Connected {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, rendezvousTimeout)
		err := n.host.Connect(cctx, p)
		cancel()
		if err != nil {
			n.log.Debug("connecting to DHT bootstrap peer", "peer", p.ID, "err", err)
		}
	}
}

// missingMember reports whether a member of v other than this device is
// not connected.
func (n *Node) missingMember(v *vault) bool {
	self := n.id.ID()
	for _, dev := range v.memberList() {
		if dev == self {
			continue
		}
		pid, err := PeerIDOf(dev)
		if err == nil && n.host.Network().Connectedness(pid) != network.Connected {
			return true
		}
	}
	return false
}

// findMembers looks up the providers of name and connects to those that
// are members of v, at the addresses the DHT returns, remembering them for
// dialLoop. Providers that are not members are ignored: they are never
// dialled, and nothing of theirs is remembered.
func (n *Node) findMembers(ctx context.Context, d *dht.IpfsDHT, v *vault, name cid.Cid) {
	fctx, cancel := context.WithTimeout(ctx, rendezvousTimeout)
	defer cancel()
	for pi := range d.FindProvidersAsync(fctx, name, rendezvousMaxProviders) {
		if pi.ID == n.host.ID() {
			continue
		}
		dev, err := DeviceIDOf(pi.ID)
		if err != nil || !v.isMember(dev) {
			n.rdv.mu.Lock()
			if n.rdv.ignored == nil {
				n.rdv.ignored = map[peer.ID]bool{}
			}
			first := !n.rdv.ignored[pi.ID]
			n.rdv.ignored[pi.ID] = true
			n.rdv.mu.Unlock()
			if first {
				v.log.Debug("ignoring a rendezvous provider that is not a member", "peer", pi.ID)
			}
			continue
		}
		if n.host.Network().Connectedness(pi.ID) == network.Connected {
			continue
		}
		cctx, ccancel := context.WithTimeout(ctx, rendezvousTimeout)
		err = n.host.Connect(cctx, pi)
		ccancel()
		if err != nil {
			v.log.Debug("connecting to a member found in the DHT", "peer", dev, "err", err)
			continue
		}
		v.log.Info("met a member through the DHT", "peer", dev)
		n.rdv.mu.Lock()
		if n.rdv.met == nil {
			n.rdv.met = map[peer.ID]bool{}
		}
		n.rdv.met[pi.ID] = true
		n.rdv.mu.Unlock()
		if len(pi.Addrs) > 0 {
			n.rememberPeer(v, dev, pi.Addrs)
		}
	}
}

// rendezvousKey is the vault's rendezvous key (keys.VaultKeys.Rendezvous),
// derived from its root secret, so it never changes with key epochs.
func (v *vault) rendezvousKey() [32]byte { return v.root.Vault().Rendezvous }
