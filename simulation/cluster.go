package simulation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/relay"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// ClusterConfig configures a Cluster.
type ClusterConfig struct {
	// Dir holds every device's home (vault databases on disk).
	Dir string
	// Link is every link's properties.
	Link LinkProps
	// RescanEvery is each node's periodic full rescan; default 2 s.
	RescanEvery time.Duration
	// Logger for the nodes; default discards.
	Logger *slog.Logger
	// Rules are the nodes' sync decisions (node.Config.Rules); zero is the
	// product's.
	Rules engine.Rules
}

// Device is one simulated device: a real node.Node with its own home on
// disk, a MemFS folder and a simulated host.
type Device struct {
	Index  int
	ID     keys.DeviceID
	Peer   peer.ID
	Host   host.Host
	FS     *folder.MemFS
	Folder string
	Natted bool
	// ClockOffset skews the device's clock (node.Config.Now) by this much
	// from the machine's; set it before Start. Zero is a right clock.
	ClockOffset time.Duration

	home *home.Home
	hv   home.Vault

	mu      sync.Mutex // guards the fields below
	node    *node.Node
	cancel  context.CancelFunc
	done    chan error
	running bool
	left    bool
}

// Node returns the running node, or nil while the device is stopped.
func (d *Device) Node() *node.Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		return nil
	}
	return d.node
}

// Running reports whether the device's node runs.
func (d *Device) Running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running
}

// Left reports whether the device left the run for good.
func (d *Device) Left() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.left
}

// Cluster is a vault shared by simulated devices. Device 0 created the
// vault and is its admin; the others joined through real invites.
type Cluster struct {
	cfg   ClusterConfig
	Net   *Network
	Root  keys.RootSecret
	Vault keys.VaultID

	mu      sync.Mutex // guards Devices, edges, relay
	Devices []*Device
	edges   map[pairKey][2]int
	relay   *SimRelay
}

// NewCluster creates the admin device (not started) in cfg.Dir.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.RescanEvery <= 0 {
		cfg.RescanEvery = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{cfg: cfg, Net: NewNetwork(cfg.Link), edges: map[pairKey][2]int{}}
	d, err := c.newDevice(false)
	if err != nil {
		return nil, err
	}
	root, hv, err := enrol.InitVault(d.home, d.Folder, "", time.Now())
	if err != nil {
		return nil, fmt.Errorf("creating the vault: %w", err)
	}
	d.hv, c.Root, c.Vault = hv, root, hv.ID
	return c, nil
}

// newDevice makes a home, an identity, a host and a MemFS.
func (c *Cluster) newDevice(natted bool) (*Device, error) {
	c.mu.Lock()
	i := len(c.Devices)
	c.mu.Unlock()
	dir := filepath.Join(c.cfg.Dir, "d"+strconv.Itoa(i))
	h, err := home.Open(filepath.Join(dir, "home"))
	if err != nil {
		return nil, err
	}
	id, err := h.Identity()
	if err != nil {
		return nil, err
	}
	hst, err := c.Net.AddHost(id, natted)
	if err != nil {
		return nil, err
	}
	// A device whose node does not run is switched off: nothing can
	// connect to its host (Start brings it up). Otherwise a running peer
	// could connect to a host no node listens on yet, which no real
	// device allows.
	c.Net.SetDown(hst.ID(), true)
	d := &Device{Index: i, ID: id.ID(), Peer: hst.ID(), Host: hst, FS: folder.NewMemFS(folder.MemFSConfig{}),
		Folder: filepath.Join(dir, "folder"), Natted: natted, home: h}
	c.mu.Lock()
	c.Devices = append(c.Devices, d)
	c.mu.Unlock()
	return d, nil
}

// Device returns device i.
func (c *Cluster) Device(i int) *Device {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Devices[i]
}

// Len is the number of devices ever added.
func (c *Cluster) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.Devices)
}

// Join adds a device through a real invite of the admin (device 0, which
// must be running): pairing over the simulated network with
// enrol.RequestJoin, then recording the vault in the new home as
// enrol.JoinVault does. The new device is not started.
func (c *Cluster) Join(ctx context.Context, natted bool) (*Device, error) {
	admin := c.Device(0)
	an := admin.Node()
	if an == nil {
		return nil, errors.New("simulation: the admin is not running")
	}
	d, err := c.newDevice(natted)
	if err != nil {
		return nil, err
	}
	if err := c.Net.LinkDefault(d.Peer, admin.Peer); err != nil {
		return nil, err
	}
	if r := c.Relay(); r != nil {
		if err := c.Net.LinkDefault(d.Peer, r.Peer); err != nil {
			return nil, err
		}
	}
	inv, err := an.Members().Invite(keys.VaultID{}, time.Minute, false)
	if err != nil {
		return nil, err
	}
	id, err := d.home.Identity()
	if err != nil {
		return nil, err
	}
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// The device is on for pairing (as `weft join` runs) and off again
	// until Start.
	c.Net.SetDown(d.Peer, false)
	j, err := enrol.RequestJoin(jctx, d.Host, id, inv, "", nil)
	c.Net.SetDown(d.Peer, true)
	if err != nil {
		return nil, fmt.Errorf("device %d joining: %w", d.Index, err)
	}
	if err := c.record(d, j.Secrets, j.Records); err != nil {
		return nil, err
	}
	// The pairing link goes: the device's links are the topology's.
	if err := c.Net.Unlink(d.Peer, admin.Peer); err != nil {
		return nil, err
	}
	return d, nil
}

// record writes the vault into d's home with the given membership.
func (c *Cluster) record(d *Device, secrets keys.VaultSecrets, records []member.Record) error {
	hv := d.hv
	if hv.ID == (keys.VaultID{}) {
		var err error
		if hv, err = d.home.AddVault(secrets, d.Folder); err != nil {
			return err
		}
	}
	db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
	if err != nil {
		return err
	}
	defer db.Close()
	have := len(db.MemberRecords())
	for _, r := range records[have:] {
		if err := db.AppendMember(r); err != nil {
			return fmt.Errorf("recording membership of device %d: %w", d.Index, err)
		}
	}
	d.hv = hv
	return nil
}

// Start runs d's node (New on its home, host and MemFS, then Run) and
// waits until it is ready.
func (c *Cluster) Start(d *Device) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running {
		return nil
	}
	var now func() time.Time
	if off := d.ClockOffset; off != 0 {
		now = func() time.Time { return time.Now().Add(off) }
	}
	n, err := node.New(node.Config{
		Home: d.home, Host: d.Host, APIAddr: "-", NoWatcher: true, Logger: c.cfg.Logger.With("dev", d.Index),
		FolderFS:    func(string) (folder.FS, error) { return d.FS, nil },
		RescanEvery: c.cfg.RescanEvery,
		Now:         now,
		Rules:       c.cfg.Rules,
	})
	if err != nil {
		return fmt.Errorf("starting device %d: %w", d.Index, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	select {
	case <-n.Ready():
	case err := <-done:
		cancel()
		return fmt.Errorf("device %d stopped at start: %v", d.Index, err)
	}
	d.node, d.cancel, d.done, d.running = n, cancel, done, true
	c.Net.SetDown(d.Peer, false)
	return nil
}

// Stop takes d off the network and stops its node; crash also throws away
// whatever its folder had not made durable, as a power cut would.
func (c *Cluster) Stop(d *Device, crash bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.running {
		return nil
	}
	c.Net.SetDown(d.Peer, true)
	d.cancel()
	err := <-d.done
	d.running, d.node = false, nil
	if crash {
		d.FS.Crash()
	}
	if err != nil {
		return fmt.Errorf("device %d run: %w", d.Index, err)
	}
	return nil
}

// Leave stops d for good.
func (c *Cluster) Leave(d *Device) error {
	err := c.Stop(d, false)
	d.mu.Lock()
	d.left = true
	d.mu.Unlock()
	return err
}

// AddEdge links devices a and b; Connect dials along it.
func (c *Cluster) AddEdge(a, b int) error {
	if a == b {
		return nil
	}
	da, db := c.Device(a), c.Device(b)
	c.mu.Lock()
	c.edges[key(da.Peer, db.Peer)] = [2]int{a, b}
	c.mu.Unlock()
	return c.Net.LinkDefault(da.Peer, db.Peer)
}

// RecordAll gives every device the membership records of the last one to
// join, so every member knows every other before the nodes start (a node
// only syncs with peers it knows as members when they connect). Devices
// must be stopped.
func (c *Cluster) RecordAll() error {
	c.mu.Lock()
	devs := append([]*Device(nil), c.Devices...)
	c.mu.Unlock()
	last := devs[len(devs)-1]
	db, _, err := vaultdb.Open(last.hv.DBDir(), c.Vault)
	if err != nil {
		return err
	}
	records := db.MemberRecords()
	db.Close()
	for _, d := range devs[1:] {
		if err := c.record(d, c.Root.Secrets(), records); err != nil {
			return err
		}
	}
	return nil
}

// Edges lists the linked pairs.
func (c *Cluster) Edges() [][2]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][2]int, 0, len(c.edges))
	for _, e := range c.edges {
		out = append(out, e)
	}
	return out
}

// ConnectEdges dials every edge whose two ends run, from whichever side
// the NAT rule allows; pairs that cannot reach each other are skipped. It
// returns how many pairs are connected afterwards. Edges are dialled by
// several workers at once: a dial waits for the link's latency and the
// nodes' connection handling, and with thousands of edges (S5) one at a
// time took minutes.
func (c *Cluster) ConnectEdges(ctx context.Context) int {
	edges := c.Edges()
	work := make(chan [2]int)
	var connected atomic.Int64
	var wg sync.WaitGroup
	for range min(32, len(edges)) {
		wg.Go(func() {
			for e := range work {
				if c.connectEdge(ctx, e) {
					connected.Add(1)
				}
			}
		})
	}
	for _, e := range edges {
		work <- e
	}
	close(work)
	wg.Wait()
	return int(connected.Load())
}

// connectEdge dials one edge (see ConnectEdges) and reports whether its
// two ends are connected afterwards.
func (c *Cluster) connectEdge(ctx context.Context, e [2]int) bool {
	a, b := c.Device(e[0]), c.Device(e[1])
	if !a.Running() || !b.Running() {
		return false
	}
	if c.Net.Connected(a.Peer, b.Peer) {
		return true
	}
	from, to := a, b
	if !c.Net.CanDial(a.Peer, b.Peer) {
		from, to = b, a
	}
	if !c.Net.CanDial(from.Peer, to.Peer) {
		return false
	}
	return c.Net.Connect(ctx, from.Peer, to.Peer) == nil
}

// Close stops every device, the relay and the network.
func (c *Cluster) Close() error {
	var errs []error
	for i := range c.Len() {
		errs = append(errs, c.Stop(c.Device(i), false))
	}
	if r := c.Relay(); r != nil {
		errs = append(errs, r.stop())
	}
	errs = append(errs, c.Net.Close())
	return errors.Join(errs...)
}

// SimRelay is a cluster's relay: the real relay.Relay (the code `weft
// relay` runs, with its store on disk) on a simulated public host, linked
// to every device. Without Config.Host's own transports it offers no
// circuit relay: devices that cannot reach each other exchange data
// through its store (docs/relay.md), which is what S3 measures.
type SimRelay struct {
	Relay *relay.Relay
	Peer  peer.ID
	// Addr is the relay's address as the vault's membership records it.
	Addr string

	cancel context.CancelFunc
	done   chan error
}

// AddRelay starts a relay with its home in Dir/relay, links it to every
// device (and Join links it to every later one), and records it in the
// vault's membership through the admin (device 0, which must be
// running), as `weft relay add` does. Call it before the other devices
// join so their invites carry the record. A cluster has at most one.
func (c *Cluster) AddRelay() (*SimRelay, error) {
	if c.Relay() != nil {
		return nil, errors.New("simulation: the cluster has a relay already")
	}
	admin := c.Device(0).Node()
	if admin == nil {
		return nil, errors.New("simulation: the admin is not running")
	}
	dir := filepath.Join(c.cfg.Dir, "relay")
	h, err := home.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("relay home: %w", err)
	}
	id, err := h.Identity()
	if err != nil {
		return nil, fmt.Errorf("relay key: %w", err)
	}
	hst, err := c.Net.AddHost(id, false)
	if err != nil {
		return nil, err
	}
	r, err := relay.New(relay.Config{Home: dir, Host: hst, NoDHT: true, NoQuota: true, Logger: c.cfg.Logger.With("dev", "relay")})
	if err != nil {
		return nil, fmt.Errorf("starting the relay: %w", err)
	}
	addrs := r.Addrs()
	if len(addrs) == 0 {
		return nil, errors.New("simulation: the relay's host has no address")
	}
	ctx, cancel := context.WithCancel(context.Background())
	sr := &SimRelay{Relay: r, Peer: hst.ID(), Addr: addrs[0], cancel: cancel, done: make(chan error, 1)}
	go func() { sr.done <- r.Run(ctx) }()
	c.mu.Lock()
	c.relay = sr
	devs := append([]*Device(nil), c.Devices...)
	c.mu.Unlock()
	for _, d := range devs {
		if err := c.Net.LinkDefault(d.Peer, sr.Peer); err != nil {
			return nil, err
		}
	}
	if err := admin.API().ChangeRelay(c.Vault, sr.Addr, false); err != nil {
		return nil, fmt.Errorf("recording the relay in the vault: %w", err)
	}
	return sr, nil
}

// Relay returns the cluster's relay, or nil.
func (c *Cluster) Relay() *SimRelay {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relay
}

// stop ends the relay's Run and waits for it.
func (r *SimRelay) stop() error {
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		return fmt.Errorf("relay run: %w", err)
	}
	return nil
}
