package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/pullset"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/clock"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/node/engineloop"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/folderguard"
	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/node/localchunks"
	"github.com/weftsync/weft/node/logview"
	"github.com/weftsync/weft/node/members"
	"github.com/weftsync/weft/node/memindex"
	"github.com/weftsync/weft/node/ownlog"
	"github.com/weftsync/weft/node/peerbook"
	"github.com/weftsync/weft/node/pieces"
	"github.com/weftsync/weft/node/reconcile"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/node/scrub"
	"github.com/weftsync/weft/node/watchloop"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// Config configures a Node.
type Config struct {
	// Home is the weft home directory (required): the device key and the
	// vaults to serve.
	Home *home.Home
	// ListenAddrs override connect.DefaultListenAddrs. An address with port 0
	// gets the port it had at the last start when that port is free
	// (recorded in Home; connect.HostConfig.Ports), unless FreshPorts is set.
	ListenAddrs []string
	FreshPorts  bool
	// MDNS turns on LAN discovery. It multicasts on every interface, so
	// tests and the demo leave it off.
	MDNS bool
	// Settle is the watcher's quiet time before a changed path is
	// scanned; default 100 ms.
	Settle time.Duration
	// RescanEvery is the interval of full rescans, which catch what the
	// watcher missed; default 10 minutes.
	RescanEvery time.Duration
	// APIAddr is where the local HTTP API listens; default 127.0.0.1:0.
	// "-" disables it.
	APIAddr string
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Rules are the sync decisions every vault runs; the zero value is
	// engine.Default(), the product's. The simulation hands a deliberately
	// broken rule here to show that its convergence check catches it
	// (simulation TestBrokenMergeRuleCaught).
	Rules engine.Rules
	// MaxFileChunks, for tests only, lowers the most chunks one file may
	// have (default and upper bound: entry.MaxFileChunks, about 256 GiB),
	// so that a test can have a file over the limit without writing
	// gigabytes.
	MaxFileChunks int
	// Pieces, for tests only, sets how a large file's chunk list is cut
	// into pieces (zero: entry.DefaultPieceParams), so that a test can
	// sync a file of many pieces without writing gigabytes.
	Pieces entry.PieceParams

	// Host, if set, is the libp2p host to use instead of building one
	// (ListenAddrs is then ignored). The simulation passes hosts of an
	// in-memory network. The caller keeps ownership: Run does not close it.
	Host host.Host
	// FolderFS, if set, opens a folder's file system instead of the OS
	// one (folder.OpenOS); the simulation passes in-memory file systems.
	FolderFS func(dir string) (folder.FS, error)
	// NoScrub turns off the background scrub of the folder (rot.go);
	// `weft scrub` still runs one.
	NoScrub bool
	// NoWatcher turns off the file watcher; changes are then found by
	// periodic rescans and Scan calls. Needed with a FolderFS that is not
	// the OS's, which fsnotify cannot watch.
	NoWatcher bool

	// Relays are circuit v2 relays (multiaddrs ending in /p2p/<ID>) the
	// device keeps a reservation on, besides its vaults' relays
	// (docs/connectivity.md).
	Relays []string
	// Punches, if set, is the hole-punch tracer of Host (connect.HostConfig.
	// Punches); New makes one for the host it builds.
	Punches *connect.PunchTracer

	// Bootstrap are servers of weft's DHT (multiaddrs ending in
	// /p2p/<ID>) to meet through, besides the vaults' relays; weft ships
	// none (docs/connectivity.md, "DHT rendezvous").
	Bootstrap []string
	// DHTServer runs the DHT in server mode (storing records for others)
	// instead of client mode.
	DHTServer bool
	// NoDHT turns DHT rendezvous off (simulations).
	NoDHT bool

	// OpenInRun leaves opening the home's vaults to Run, after the local
	// API listens, instead of New: `weft status` then answers at once and
	// shows each folder "opening" while a large vault's graph is loaded
	// (issue 16, B10), and API calls that need a vault wait for it. `weft
	// up` sets it; callers that look at the vaults between New and Run
	// (tests, the simulation) leave it off.
	OpenInRun bool
}

// Node is a running weft device.
type Node struct {
	cfg  Config
	id   *keys.Identity
	host host.Host
	log  *slog.Logger
	now  func() time.Time
	// rules are the sync decisions (Config.Rules, defaults filled in).
	rules engine.Rules

	vaults atomic.Pointer[vaultSet] // replaced whole when a vault is added
	run    running                  // Run's context and group, for vaults added later
	events *api.Bus
	// members answers for the vaults' membership (node/members).
	members *members.Service
	stats   nodeStats
	// strangers counts and limits what peers not admitted may do
	// (strangers.go).
	strangers *strangers
	api       *apiRun

	ready chan struct{} // closed once Run accepts streams and API calls
	// dialWake (buffer 1) wakes the dial loop (wakeDial); clockWake
	// (buffer 1) the clock loop, when a peer connects.
	dialWake, clockWake chan struct{}
	opened              chan struct{} // closed once every vault the home held at the start is open (OpenInRun)
	ownHost             bool          // Run closes the host it built

	mu    sync.Mutex // guards peers
	peers map[keys.DeviceID]*peerState
	// pullers is the one log puller of each peer and vault (syncWith).
	pullers pullset.Set[pullKey]

	rdv connect.Rendezvous // DHT rendezvous state and test knobs (rendezvous.go)

	clocks clock.State // members' clocks as measured (node/clock)
}

// nodeStats are counters over the node's life.
type nodeStats struct {
	chunksServed      atomic.Int64
	chunksFetched     atomic.Int64
	chunkBytesFetched atomic.Int64
	versionScrubBytes atomic.Uint64 // local version stores re-verified (node/keeper)
	versionCorrupt    atomic.Uint64 // their chunks found corrupt
}

// peerState is what the node knows about one device it talks to.
type peerState struct {
	dev      keys.DeviceID
	id       peer.ID
	counters peerCounters
	// guarded by Node.mu:
	connected bool
	conn      string // lan, direct, relayed
	lastSeen  time.Time
}

// pullKey names the one log puller of a peer and a vault (node/pullset).
type pullKey struct {
	dev keys.DeviceID
	v   *vault
}

// peerCounters count application payload bytes and messages (framing not
// included) to and from one peer over the life of the process.
type peerCounters struct {
	bytesSent, bytesReceived atomic.Int64
	msgsSent, msgsReceived   atomic.Int64
}

// Sent counts a frame sent (wire.Counter).
func (c *peerCounters) Sent(n int) {
	c.bytesSent.Add(int64(n))
	c.msgsSent.Add(1)
}

// Received counts a frame received (wire.Counter).
func (c *peerCounters) Received(n int) {
	c.bytesReceived.Add(int64(n))
	c.msgsReceived.Add(1)
}

// New opens every vault in the home and starts the libp2p host. Run
// starts syncing.
func New(cfg Config) (*Node, error) {
	if cfg.Home == nil {
		return nil, errors.New("node: config needs a home")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 100 * time.Millisecond
	}
	if cfg.RescanEvery <= 0 {
		cfg.RescanEvery = 10 * time.Minute
	}
	if cfg.Host == nil {
		cfg.Punches = connect.NewPunchTracer()
	}
	if _, err := connect.ParseBootstrap(cfg.Bootstrap); err != nil {
		return nil, err
	}
	id, err := cfg.Home.Identity()
	if err != nil {
		return nil, err
	}
	hvs, err := cfg.Home.Vaults()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, id: id, log: cfg.Logger, now: cfg.Now, rules: cfg.Rules.OrDefault(),
		events: api.NewBus(), peers: map[keys.DeviceID]*peerState{}, ready: make(chan struct{}), dialWake: make(chan struct{}, 1), clockWake: make(chan struct{}, 1),
		opened:    make(chan struct{}),
		strangers: newStrangers(cfg.Logger),
	}
	n.members = members.New(memberAgent{n}, cfg.Logger)
	n.vaults.Store(&vaultSet{byID: map[keys.VaultID]*vault{}, opening: hvs})
	if !cfg.OpenInRun {
		if err := n.openVaults(); err != nil {
			n.closeVaults()
			return nil, err
		}
	}
	if cfg.Host != nil {
		n.host = cfg.Host
		return n, nil
	}
	n.host, err = connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: cfg.ListenAddrs, Punches: cfg.Punches, Gater: n.strangers.bans,
		Ports: cfg.Home, FreshPorts: cfg.FreshPorts, Log: cfg.Logger, Trusted: n.trustedPeer})
	if err != nil {
		n.closeVaults()
		return nil, err
	}
	n.ownHost = true
	return n, nil
}

// openVaults opens the vaults the home held when New ran (the vault set's
// opening list), one at a time, each served as soon as it is open, then
// closes n.opened. On an error the vaults opened so far stay in the set,
// for the caller to close.
func (n *Node) openVaults() error {
	for _, hv := range n.vaults.Load().opening {
		v, err := n.openVault(hv)
		if err != nil {
			return fmt.Errorf("vault for %s: %w", hv.Folder, err)
		}
		n.vaults.Store(n.vaults.Load().with(v))
	}
	close(n.opened)
	return nil
}

// openVault opens a vault's database and folder and rebuilds the derived
// state from its log (from the graph snapshot and the entries after it,
// where the snapshot is current: graphsnap.go).
func (n *Node) openVault(hv home.Vault) (*vault, error) {
	defer startBusy()() // the collector's start policy (startgc.go)
	secrets, err := n.cfg.Home.VaultSecrets(hv)
	if err != nil {
		return nil, err
	}
	vk := secrets.Vault()
	// The graph snapshot loads while the log opens (graphsnap.go); every
	// return below waits for it.
	snap := startGraphSnapshot(hv.Dir, n.log.With("folder", hv.Folder))
	db, report, err := vaultdb.Open(hv.DBDir(), vk.ID)
	if err != nil {
		snap()
		return nil, err
	}
	if err := report.Err(); err != nil {
		n.log.Warn("vault database recovered", "folder", hv.Folder, "report", err)
	}
	if report.Rebuilt {
		n.log.Warn("vault index rebuilt from the logs: the folder is rescanned and what it holds adopted", "folder", hv.Folder)
	}
	var fsys folder.FS
	if n.cfg.FolderFS != nil {
		fsys, err = n.cfg.FolderFS(hv.Folder)
	} else {
		fsys, err = folder.OpenOS(hv.Folder)
	}
	if err != nil {
		snap()
		db.Close()
		return nil, err
	}
	ek := secrets.Epoch0().Keys(0)
	cr := keyring.New()
	v := &vault{
		agent: n, device: n.id, events: n.events, now: n.now, stats: &n.stats,
		maxFileChunks: n.cfg.MaxFileChunks, pieceCfg: n.cfg.Pieces,
		cfg: hv, id: vk.ID, secrets: secrets, ek: ek, ck: chunk.KeysFrom(ek), db: db,
		crypt: cr, fs: fsys, chunks: localchunks.NewFiles(fsys, cr),
		log:       n.log.With("folder", hv.Folder),
		report:    folderReport{folder: hv.Folder, events: n.events, monitor: n.monitor},
		roster:    roster.New(n.id, secrets, db.MemberState(), db, n.now),
		view:      logview.New(n.log.With("folder", hv.Folder)),
		index:     memindex.New(),
		book:      peerbook.New(metaStore{db}),
		grow:      make(chan struct{}),
		cleaned:   make(chan struct{}),
		fguard:    folderguard.New(),
		kicked:    make(chan struct{}, 1),
		firstScan: make(chan struct{}),
		tail:      ownlog.NewGate(ownLostTo(n.id.ID(), report), report.NeedRescan),
	}
	v.pieces = pieces.New(db, v.log, v.noteHomeWrite)
	v.mh.damaged = memberDamaged(report)
	v.openKeeper()
	v.local = localchunks.Source{Files: v.chunks, Keep: v.keep, Crypt: v.crypt, DB: db}
	// closeStores closes what the vault opened when opening it fails: the
	// version store too, or a later open of the folder in this process
	// would find its lock held and run without local versions.
	closeStores := func() {
		snap()
		_ = v.keep.Close()
		db.Close()
	}
	v.learnEpochs() // the epoch keys this device holds, from the membership log
	policy, err := loadMassDeletePolicy(db)
	if err != nil {
		v.log.Warn("using the default mass-delete policy", "err", err)
	}
	folding, err := folder.Probe(fsys)
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("probing the folder's file system: %w", err)
	}
	v.folding = folding
	v.engine = engineloop.New(engine.Config{Rules: n.rules, MassDelete: policy, Fold: folding.Key})
	v.rules = n.rules.OrDefault()
	v.rec = reconcile.New(reconcileSide{carrySide{v}}, v.engine, v.kicked)
	idx := indexView{v}
	if v.scanner, err = folder.NewScanner(folder.ScannerConfig{FS: fsys, Index: idx, Hasher: epochHasher{v}, Folding: folding, Logger: v.log}); err != nil {
		closeStores()
		return nil, err
	}
	if v.applier, err = folder.NewApplier(folder.ApplierConfig{FS: fsys, Index: idx, Folding: folding, Logger: v.log}); err != nil {
		closeStores()
		return nil, err
	}
	// The folder index loads on a second core while the graph is rebuilt
	// (0.17 s and 0.28 s of a restart's CPU at 100,000 files,
	// docs/benchmarks.md): the two fill disjoint parts of v (index,
	// chunk places; graph, bodies, dirty and the clocks),
	// and nothing else sees v yet. Every return below waits for it
	// (loadIndex.Wait) before the database closes.
	var loadIndex sync.WaitGroup
	var indexErr error
	loadIndex.Go(func() {
		indexErr = db.IndexAll(func(path string, r vaultdb.Record) error {
			v.setIndexLocked(path, r)
			return nil
		})
	})
	fail := func(err error) (*vault, error) {
		loadIndex.Wait()
		closeStores()
		return nil, err
	}
	// Rebuild the graph from the log: every entry opens with the vault's
	// keys (the log verified itself when the database opened). Each body
	// was opened with entry.OpenBody before its entry was stored, so it is
	// opened here without the canonical re-encode (entry.OpenStoredBody;
	// authentication and the rules on versions are still checked).
	v.view.Replaying = true
	heads := db.Heads()
	from := v.useGraphSnapshotLocked(snap(), heads) // graphsnap.go: nil replays every entry
	v.opened.fromSnapshot = from != nil
	for author, head := range heads {
		err := db.Range(author, from[author]+1, head.Seq, func(e *entry.Entry) error {
			v.opened.replayed++
			body, err := v.crypt.OpenStoredBody(e)
			if err != nil {
				return fmt.Errorf("opening body of %s/%d: %w", author, e.Seq(), err)
			}
			// Every piece was stored before its entry; one missing or
			// damaged since is fetched again when needed (pieces.go).
			body = v.pieces.ExpandStored(body)
			v.addBodyLocked(e, body)
			return nil
		})
		if err != nil {
			return fail(err)
		}
	}
	v.view.Replaying = false
	// What members and relays said they hold, so "unsafe" is truthful
	// from the start (nothing is locked yet: the vault is not shared).
	peers := v.roster.Members()
	for _, r := range v.relays() {
		peers = append(peers, r.dev)
	}
	for _, d := range peers {
		acked, err := db.Acked(d)
		if err != nil {
			return fail(err)
		}
		if len(acked) > 0 {
			v.peers.Set(d, protocol.Vector(acked))
		}
	}
	loadIndex.Wait()
	if indexErr != nil {
		closeStores()
		return nil, indexErr
	}
	v.shareChunkListsLocked()
	// A restart reconciles only what the last run left undone
	// (engine.Engine.Reopened). No loop runs yet: do runs it here.
	v.touchSnapshotPaths() // graphsnap.go
	v.engine.Do(func(e *engine.Engine) { e.Reopened(guardIndex{v}) })
	if v.membershipLost() {
		v.mh.lost = true
		v.log.Warn("membership log damaged; fetching it again from the members this device remembers")
	}
	v.tailCheck()
	v.tail.OpenAtStart()
	v.log.Debug("vault opened", "from_snapshot", v.opened.fromSnapshot, "entries_replayed", v.opened.replayed, "versions", v.view.Graph.Len())
	collectAfterOpen(v.view.Graph.Len()) // startgc.go
	return v, nil
}

// stopVaults writes each vault's graph snapshot (graphsnap.go), then closes
// the vaults: Run's last step, once every goroutine that changes a vault
// has returned.
func (n *Node) stopVaults() {
	for _, v := range n.vaultsNow() {
		if err := v.saveGraphSnapshot(); err != nil {
			n.log.Warn("the next start replays the whole log", "folder", v.cfg.Folder, "err", err)
		}
	}
	n.closeVaults()
}

func (n *Node) closeVaults() {
	for _, v := range n.vaultsNow() {
		if err := v.db.Close(); err != nil {
			n.log.Warn("closing vault database", "folder", v.cfg.Folder, "err", err)
		}
		if err := v.keep.Close(); err != nil {
			n.log.Warn("closing the version store", "folder", v.cfg.Folder, "err", err)
		}
	}
}

// ID returns the device ID.
func (n *Node) ID() keys.DeviceID { return n.id.ID() }

// Addrs returns the host's listen addresses with its peer ID.
func (n *Node) Addrs() []string {
	var out []string
	for _, a := range n.host.Addrs() {
		out = append(out, a.String()+"/p2p/"+n.host.ID().String())
	}
	return out
}

// Scan rescans every folder now and records what changed; it returns once
// the resulting entries are durable.
func (n *Node) Scan(ctx context.Context) error {
	for _, v := range n.vaultsNow() {
		if _, err := v.scan(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// Ready is closed once Run accepts streams and API calls.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// APIAddr is the local API's address, once Run has started it.
func (n *Node) APIAddr() string {
	if n.api == nil {
		return ""
	}
	return n.api.srv.Addr()
}

func (n *Node) vault(id keys.VaultID) *vault { return n.vaults.Load().byID[id] }

// vaultsNow returns the vaults open now, in the order they were opened.
// The slice is never changed in place: a vault added later is in the next
// call's slice only.
func (n *Node) vaultsNow() []*vault { return n.vaults.Load().list }

// counters returns the counters of a peer, creating its state.
func (n *Node) counters(d keys.DeviceID) *peerCounters {
	return &n.peerState(d).counters
}

func (n *Node) peerState(d keys.DeviceID) *peerState {
	n.mu.Lock()
	defer n.mu.Unlock()
	ps, ok := n.peers[d]
	if !ok {
		pid, _ := PeerIDOf(d)
		ps = &peerState{dev: d, id: pid}
		n.peers[d] = ps
	}
	return ps
}

// Run syncs until ctx ends: it answers the stream protocols, scans and
// watches every folder, dials known peers, and applies what arrives. It
// returns nil after a clean shutdown.
func (n *Node) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer n.stopVaults()
	defer n.strangers.refused.Close()
	if n.ownHost {
		defer n.host.Close()
	}

	// Every goroutine the node starts from here on is in wg (goRun), and
	// Run waits for them (after cancelling ctx, also on an early error
	// return) before the deferred calls above close the vaults.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	n.run.mu.Lock()
	n.run.ctx, n.run.wg = ctx, &wg
	n.run.mu.Unlock()
	defer func() {
		// Before wg.Wait: nothing may join the group once it is waited for.
		n.run.mu.Lock()
		n.run.wg, n.run.stopped, n.run.vaultsStarted = nil, true, false
		n.run.mu.Unlock()
	}()

	// The API first: with OpenInRun it answers status (each folder
	// "opening") while the vaults open; calls that need a vault wait for
	// n.opened (node/api, waitOpen). Streams are answered only once the
	// vaults are open: a peer that asks earlier is told the protocol is
	// not supported and retries, as it does when the agent is down.
	if n.cfg.APIAddr != "-" {
		a, err := n.startAPI(ctx, n.cfg.APIAddr)
		if err != nil {
			return err
		}
		n.api = a
		wg.Go(func() { a.serve(ctx, n) })
	}
	if n.cfg.OpenInRun {
		if err := n.openVaults(); err != nil {
			return err
		}
	}

	n.host.SetStreamHandler(ProtoLog, n.owned(n.handleLog))
	n.host.SetStreamHandler(ProtoChunk, n.owned(func(_ context.Context, s network.Stream) { n.handleChunk(s) }))
	n.host.SetStreamHandler(ProtoPair, n.owned(n.handlePair))
	n.host.SetStreamHandler(ProtoRecover, n.owned(func(_ context.Context, s network.Stream) { n.handleRecover(s) }))
	n.host.SetStreamHandler(ProtoClock, n.owned(func(_ context.Context, s network.Stream) { n.handleClock(s) }))
	n.host.Network().Notify(&network.NotifyBundle{
		ConnectedF:    func(_ network.Network, c network.Conn) { n.onConnected(c) },
		DisconnectedF: func(_ network.Network, c network.Conn) { n.onDisconnected(c) },
	})
	// Connections opened before the notifier was registered (a peer that
	// dialled in between New and Run, or a Config.Host handed in already
	// connected) raised no event: without this the node would never pull
	// from those peers until the connection dropped and came back.
	// syncWith starts one puller per peer and vault, so a connection that
	// is also reported by the notifier is not synced twice.
	for _, c := range n.host.Network().Conns() {
		n.onConnected(c)
	}

	// Remember where members listen once identify tells us, so we can
	// dial them again after a restart.
	sub, err := n.host.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted))
	if err != nil {
		return fmt.Errorf("subscribing to identify events: %w", err)
	}
	defer sub.Close()
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				ev := e.(event.EvtPeerIdentificationCompleted)
				dev, err := DeviceIDOf(ev.Peer)
				if err != nil {
					continue
				}
				for _, v := range n.vaultsNow() {
					if v.roster.IsMember(dev) && len(ev.ListenAddrs) > 0 {
						n.rememberPeer(v, dev, ev.ListenAddrs)
					}
				}
			}
		}
	})

	if n.cfg.MDNS {
		svc := mdns.NewMdnsService(n.host, "weft", mdnsNotifee{n})
		if err := svc.Start(); err != nil {
			n.log.Warn("mDNS discovery off", "err", err)
		} else {
			defer svc.Close()
		}
	}
	n.run.mu.Lock()
	for _, v := range n.vaultsNow() {
		n.startVault(ctx, &wg, v)
	}
	n.run.vaultsStarted = true
	n.run.mu.Unlock()
	wg.Go(func() { connect.DialLoop(ctx, dialSide{n}, n.dialWake, connect.DefaultDialTimes) })
	wg.Go(func() { n.keepConnectivity(ctx) })
	wg.Go(func() { n.rendezvousLoop(ctx) })
	wg.Go(func() { n.clockLoop(ctx) })
	close(n.ready)
	<-ctx.Done()
	return nil
}

// startVault starts syncing v under Run: the watcher started, the first
// scan once its watches are in place, temp files of an earlier run
// removed, then the watcher until ctx ends.
func (n *Node) startVault(ctx context.Context, wg *sync.WaitGroup, v *vault) {
	wg.Go(func() {
		firstScan := func(watchDir func(string)) bool {
			done := startBusy() // the collector's start policy (startgc.go)
			res, err := v.scanWatching(ctx, nil, scanFull, watchDir)
			done()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, errFolderStopped) {
					v.log.Error("first scan", "err", err)
				}
			} else {
				v.log.Info("scanned", "files", res.Files, "changes", res.NumChanges())
			}
			v.removeLeftTemps(ctx, res, err)
			close(v.cleaned)
			close(v.firstScan)
			n.events.Publish(api.Event{Type: api.EventScanned, Folder: v.cfg.Folder, Count: res.NumChanges()})
			v.kick()
			if !n.cfg.NoScrub {
				wg.Go(func() { scrub.Loop(ctx, scrubVault{v}) })
			}
			return err == nil
		}
		watchloop.Run(ctx, watchSide{v}, watchloop.Config{Watcher: !n.cfg.NoWatcher, Settle: n.cfg.Settle, RescanEvery: n.cfg.RescanEvery}, firstScan)
	})
	wg.Go(func() { v.tailLoop(ctx) })
	wg.Go(func() { v.keep.Run(ctx) })
	wg.Go(func() { v.engine.Run(ctx) })
	wg.Go(func() { v.rec.Run(ctx, v.cleaned) })
}

// removeLeftTemps removes the temp files an earlier run left in the
// folder (a crash or a kill mid-apply), before this run's first apply:
// those the first scan listed, or, when it could not walk the folder, those
// a walk of their own finds. No apply has run yet (they wait for
// v.cleaned), so every temp file is a leftover. Reusing the scan's walk
// spares a second walk of the whole folder at every start (0.28 s of a
// restart's CPU at 100,000 files, docs/benchmarks.md). A temp file in a
// directory ignored here (a crash while a peer's version of an ignored
// path was applied) is not seen by the scan and stays.
func (v *vault) removeLeftTemps(ctx context.Context, first folder.Result, scanErr error) {
	var removed []string
	var err error
	if scanErr == nil {
		removed, err = v.applier.RemoveTemps(first.Temps)
	} else {
		removed, err = v.applier.CleanTemps(ctx)
	}
	if err != nil && ctx.Err() == nil {
		v.log.Warn("removing temporary files of an earlier run", "err", err)
	}
	if len(removed) > 0 {
		v.log.Info("removed temporary files of an earlier run", "count", len(removed))
	}
}

// mdnsNotifee connects to peers found on the LAN; the log protocol then
// finds out whether they share a vault.
type mdnsNotifee struct{ n *Node }

func (m mdnsNotifee) HandlePeerFound(pi peer.AddrInfo) {
	if pi.ID == m.n.host.ID() {
		return
	}
	dev, err := DeviceIDOf(pi.ID)
	if err != nil || !m.n.isMemberAnywhere(dev) {
		return
	}
	m.n.goRun(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := m.n.host.Connect(ctx, pi); err != nil {
			m.n.log.Debug("connecting to LAN peer", "peer", dev, "err", err)
		}
	})
}

func (n *Node) isMemberAnywhere(d keys.DeviceID) bool {
	for _, v := range n.vaultsNow() {
		if v.roster.IsMember(d) {
			return true
		}
	}
	return false
}

func (n *Node) onConnected(c network.Conn) {
	dev, err := DeviceIDOf(c.RemotePeer())
	if err != nil || !n.isPeerAnywhere(dev) && !n.fetchesMembershipAnywhere(dev) {
		return
	}
	n.admitLimits(c.RemotePeer())
	ps := n.peerState(dev)
	kind := connect.BestKind(n.host, c, n.cfg.Punches)
	n.mu.Lock()
	ps.connected, ps.conn, ps.lastSeen = true, kind, n.now()
	n.mu.Unlock()
	n.events.Publish(api.Event{Type: api.EventPeerConnected, Peer: dev.String(), Kind: kind})
	n.goRun(func(ctx context.Context) { n.syncWith(ctx, c.RemotePeer()) })
	select { // measure its clock now (clockLoop)
	case n.clockWake <- struct{}{}:
	default:
	}
}

func (n *Node) onDisconnected(c network.Conn) {
	dev, err := DeviceIDOf(c.RemotePeer())
	if err != nil {
		return
	}
	if n.host.Network().Connectedness(c.RemotePeer()) == network.Connected {
		return
	}
	n.mu.Lock()
	ps, ok := n.peers[dev]
	if ok {
		ps.connected, ps.lastSeen = false, n.now()
	}
	n.mu.Unlock()
	if ok {
		n.events.Publish(api.Event{Type: api.EventPeerDisconnected, Peer: dev.String()})
		n.wakeDial()
	}
}

// syncWith starts pulling the log of every vault shared with p, one
// puller per vault (node/pullset) on a goroutine of Run's group; a puller
// already running is woken instead. Each retries while the peer stays
// connected and ctx (Run's) lasts.
func (n *Node) syncWith(ctx context.Context, p peer.ID) {
	dev, err := DeviceIDOf(p)
	if err != nil {
		return
	}
	n.peerState(dev) // a device that became a member after it connected is known from here on
	for _, v := range n.vaultsNow() {
		isRelay := v.isRelay(dev)
		if !isRelay && !v.roster.IsMember(dev) && !v.fetchesMembershipFrom(dev) {
			continue
		}
		n.pullers.Start(pullKey{dev, v}, n.goRun, func(ctx context.Context, kick <-chan struct{}) {
			if isRelay {
				n.syncWithRelay(ctx, v, p, dev, kick)
			} else {
				n.pullWhileConnected(ctx, v, p, dev, kick)
			}
		})
	}
}

// pullWhileConnected pulls v's log from device dev at p, retrying with
// backoff while the peer stays connected; a kick retries at once.
func (n *Node) pullWhileConnected(ctx context.Context, v *vault, p peer.ID, dev keys.DeviceID, kick <-chan struct{}) {
	backoff := pullset.FirstBackoff
	for ctx.Err() == nil && n.host.Network().Connectedness(p) == network.Connected {
		err := v.pullLog(ctx, p, dev)
		if ctx.Err() != nil {
			return
		}
		v.log.Debug("log stream ended", "peer", dev, "err", err)
		if !pullset.Wait(ctx, kick, &backoff, 10*time.Second) {
			return
		}
	}
}

// kickPullers ends the backoff wait of every log puller of v, so that
// each tries its peer again now (the home has room again: homefull.go).
func (n *Node) kickPullers(v *vault) {
	n.pullers.Kick(func(k pullKey) bool { return k.v == v })
}

// syncWithDevice starts pulling from d if it is connected: a device that
// just became a member was ignored when it connected.
func (n *Node) syncWithDevice(d keys.DeviceID) {
	pid, err := PeerIDOf(d)
	if err != nil || n.host.Network().Connectedness(pid) != network.Connected {
		return
	}
	n.goRun(func(ctx context.Context) { n.syncWith(ctx, pid) })
}

// connected is a connected member of a vault.
type connected struct {
	id  peer.ID
	dev keys.DeviceID
}

// connectedMembers lists the vault's members and relays this node is
// connected to, members first, each in a stable order.
func (n *Node) connectedMembers(v *vault) []connected {
	var out []connected
	peers := v.roster.Members()
	for _, r := range v.relays() {
		peers = append(peers, r.dev)
	}
	for _, d := range peers {
		if d == n.id.ID() {
			continue
		}
		pid, err := PeerIDOf(d)
		if err != nil {
			continue
		}
		if n.host.Network().Connectedness(pid) == network.Connected {
			out = append(out, connected{id: pid, dev: d})
		}
	}
	return out
}

// wakeDial makes the dial loop look now: a peer went away, an address was
// learned, the membership changed.
func (n *Node) wakeDial() {
	select {
	case n.dialWake <- struct{}{}:
	default:
	}
}

// dialSide is the Node as connect.DialLoop sees it: the members and
// relays of every vault, with the addresses each vault remembers (its peer
// book, the relays' own addresses).
type dialSide struct{ n *Node }

func (d dialSide) Targets() []connect.DialTarget {
	var out []connect.DialTarget
	for _, v := range d.n.vaultsNow() {
		known := v.book.All()
		if known == nil {
			known = map[keys.DeviceID][]string{}
		}
		for _, r := range v.relays() {
			known[r.dev] = append(known[r.dev], multiaddrStrings(r.info)...)
		}
		for dev, addrs := range known {
			if dev == d.n.id.ID() || !v.isPeer(dev) && !v.fetchesMembershipFrom(dev) {
				continue
			}
			if _, err := PeerIDOf(dev); err != nil {
				continue
			}
			out = append(out, connect.DialTarget{Device: dev, Addrs: addrs})
		}
	}
	return out
}

func (d dialSide) Connected(dev keys.DeviceID) bool {
	pid, err := PeerIDOf(dev)
	return err == nil && d.n.host.Network().Connectedness(pid) == network.Connected
}

func (d dialSide) Connect(ctx context.Context, dev keys.DeviceID, addrs []ma.Multiaddr) error {
	pid, err := PeerIDOf(dev)
	if err != nil {
		return err
	}
	return d.n.host.Connect(ctx, peer.AddrInfo{ID: pid, Addrs: addrs})
}

func (d dialSide) Now() time.Time { return d.n.now() }

// rememberPeer records addresses for a member, for the dial loop.
func (n *Node) rememberPeer(v *vault, d keys.DeviceID, addrs []ma.Multiaddr) {
	var s []string
	for _, a := range addrs {
		s = append(s, a.String())
	}
	slices.Sort(s)
	if err := v.book.Set(d, s); err != nil {
		v.log.Warn("remembering peer addresses", "peer", d, "err", err)
	}
	n.wakeDial()
}
