package simulation

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/engine"
)

// Config is one run of a scheduled scenario (S1, S3, S4).
type Config struct {
	Scenario string
	Seed     uint64
	Devices  int
	Steps    int
	// Duration is the schedule phase: steps are spread evenly over it
	// (a step whose predecessors ran late starts at once).
	Duration time.Duration
	// Until, if > 0, runs only steps [0, Until): a replay up to a step.
	Until int
	Probs Probs
	Link  LinkProps
	// Degree > 0 links each device to about Degree others (a ring plus
	// random chords); 0 links every pair.
	Degree int
	// NAT puts every odd-numbered device behind a NAT (S3).
	NAT bool
	// Hub adds one extra public device linked to all, which writes
	// nothing (S3's stand-in for a relay).
	Hub bool
	// Settle bounds the wait for convergence after healing; default 60 s.
	Settle time.Duration
	// Dir holds the homes; default a fresh temporary directory, removed
	// at the end.
	Dir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Rules are the devices' sync decisions; zero is the product's. A
	// test hands a broken rule here to show the checks catch it.
	Rules engine.Rules
}

// write is one simulated user write and what became of it.
type write struct {
	Key        string
	Step, Dev  int
	Path       string
	Hash       [32]byte
	Size       int
	Acked      bool
	AckedAt    time.Time
	Superseded bool
}

// runner executes a schedule on a cluster.
type runner struct {
	cfg Config
	c   *Cluster
	ctx context.Context
	log io.Writer

	mu        sync.Mutex // guards the fields below
	writes    []*write
	byKey     map[string]*write
	byHash    map[[32]byte]*write
	firstSeen map[string]map[int]time.Time // write key -> device -> first seen
	curve     []Point
	ops       map[OpKind]int
	skipped   int
	pendingUp []*Device
	bytesOld  map[int]counters // counters of stopped node incarnations
}

// Point is one sample of convergence: the share of expected observations
// made by time T (seconds since the run started).
type Point struct {
	T     float64 `json:"t"`
	Share float64 `json:"share"`
}

type counters struct{ bytes, msgs int64 }

// Run executes cfg's schedule on a fresh cluster, heals, settles and
// checks. The returned error is for setup failures; check failures are in
// Result.Failures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	what := fmt.Sprintf("%d devices", cfg.Devices)
	return runSchedule(ctx, cfg, what, func(cfg Config) (*Cluster, int, error) {
		total := cfg.Devices
		if cfg.Hub {
			total++
		}
		c, _, err := buildCluster(ctx, cfg, total)
		return c, total, err
	}, nil)
}

// runSchedule is the body of every schedule scenario: it sets cfg's
// defaults, builds the cluster with build (which also says how many
// nodes it holds), runs the schedule, heals, settles, collects traffic,
// calls finish (if set) while the cluster is still up, and checks. what
// describes the cluster in the log.
func runSchedule(ctx context.Context, cfg Config, what string, build func(Config) (*Cluster, int, error), finish func(*Cluster, *Result)) (*Result, error) {
	if cfg.Devices < 2 {
		return nil, fmt.Errorf("simulation: %d devices, want at least 2", cfg.Devices)
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "weft-sim-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	ops := Generate(cfg.Seed, cfg.Devices, cfg.Steps, cfg.Probs)
	if cfg.Until > 0 && cfg.Until < len(ops) {
		ops = ops[:cfg.Until]
	}
	fmt.Fprintf(cfg.Log, "%s: seed %d, %s, %d steps\n", cfg.Scenario, cfg.Seed, what, len(ops))
	start := time.Now()
	var ms0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)

	c, total, err := build(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r := &runner{cfg: cfg, c: c, ctx: ctx, log: cfg.Log,
		byKey: map[string]*write{}, byHash: map[[32]byte]*write{}, firstSeen: map[string]map[int]time.Time{},
		ops: map[OpKind]int{}, bytesOld: map[int]counters{}}
	res := &Result{Scenario: cfg.Scenario, Seed: cfg.Seed, Devices: total, Steps: len(ops), Until: cfg.Until}
	var ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	res.MemPerNode = float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / float64(total)
	res.SetupSeconds = time.Since(start).Seconds()

	sctx, stopSampler := context.WithCancel(ctx)
	samplerDone := make(chan struct{})
	go func() { defer close(samplerDone); r.sample(sctx, start) }()
	stop := func() { stopSampler(); <-samplerDone }

	gap := time.Duration(0)
	if len(ops) > 0 {
		gap = cfg.Duration / time.Duration(len(ops))
	}
	// Steps keep to a timeline (step i is due at i x gap after the first)
	// rather than pausing gap after each: on a slow machine the user's
	// operations themselves take longer than gap, and pausing on top of
	// them only stretched the run without adding any schedule.
	begin := time.Now()
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			stop()
			return nil, err
		}
		r.bringUp()
		if err := r.exec(op); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("seed %d step %d (%s): %v", cfg.Seed, op.Step, op, err))
		}
		if wait := time.Until(begin.Add(time.Duration(i+1) * gap)); wait > 0 {
			time.Sleep(wait)
		}
	}
	// Heal everything and let it settle.
	healStart := time.Now()
	r.bringUp()
	c.Net.HealAll()
	for _, d := range r.devices() {
		if !d.Left() && !d.Running() {
			if err := c.Start(d); err != nil {
				res.Failures = append(res.Failures, err.Error())
			}
		}
	}
	c.ConnectEdges(ctx)
	conv, diverged := r.settle(cfg.Settle)
	res.Converged = conv
	res.ConvergeSeconds = time.Since(healStart).Seconds()
	if !conv {
		res.Failures = append(res.Failures, fmt.Sprintf("seed %d step %d: devices did not converge within %v after healing: %s", cfg.Seed, len(ops), cfg.Settle, diverged))
	}
	stop()
	r.collectTraffic(res)
	if finish != nil {
		finish(c, res)
	}
	r.check(res)
	res.WallSeconds = time.Since(start).Seconds()
	return res, nil
}

// buildCluster creates and pairs every device, links them and starts
// them.
func buildCluster(ctx context.Context, cfg Config, total int) (*Cluster, func(int) bool, error) {
	c, err := NewCluster(ClusterConfig{Dir: cfg.Dir, Link: cfg.Link, Rules: cfg.Rules})
	if err != nil {
		return nil, nil, err
	}
	natOf := func(i int) bool { return cfg.NAT && i%2 == 1 && i < cfg.Devices }
	if err := c.Start(c.Device(0)); err != nil {
		c.Close()
		return nil, nil, err
	}
	for i := 1; i < total; i++ {
		if _, err := c.Join(ctx, natOf(i)); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	// Every device learns every member before starting, so the first
	// connections already sync (see RecordAll).
	if err := c.RecordAll(); err != nil {
		c.Close()
		return nil, nil, err
	}
	if err := linkTopology(c, cfg, total); err != nil {
		c.Close()
		return nil, nil, err
	}
	for i := range total {
		if err := c.Start(c.Device(i)); err != nil {
			c.Close()
			return nil, nil, err
		}
	}
	c.ConnectEdges(ctx)
	return c, natOf, nil
}

// linkTopology links every pair (Degree 0), or a ring plus random chords.
func linkTopology(c *Cluster, cfg Config, total int) error {
	if cfg.Degree <= 0 || cfg.Degree >= total-1 {
		for i := range total {
			for j := i + 1; j < total; j++ {
				if err := c.AddEdge(i, j); err != nil {
					return err
				}
			}
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x70b0))
	for i := range total {
		if err := c.AddEdge(i, (i+1)%total); err != nil {
			return err
		}
		for range max(0, cfg.Degree/2-1) {
			if err := c.AddEdge(i, rng.IntN(total)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *runner) devices() []*Device {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	return append([]*Device(nil), r.c.Devices...)
}

// bringUp starts the devices a restart stopped at the previous step.
func (r *runner) bringUp() {
	r.mu.Lock()
	up := r.pendingUp
	r.pendingUp = nil
	r.mu.Unlock()
	for _, d := range up {
		if err := r.c.Start(d); err != nil {
			fmt.Fprintf(r.log, "restarting d%d: %v\n", d.Index, err)
			continue
		}
		r.c.ConnectEdges(r.ctx)
	}
}

// userDevice returns device i if it exists and runs.
func (r *runner) userDevice(i int) *Device {
	if i >= r.c.Len() {
		return nil
	}
	d := r.c.Device(i)
	if !d.Running() {
		return nil
	}
	return d
}

func (r *runner) skip() {
	r.mu.Lock()
	r.skipped++
	r.mu.Unlock()
}

// supersede marks the write whose content the user just replaced or
// deleted (b, if ok; see userops.go) as superseded.
func (r *runner) supersede(b []byte, ok bool) {
	if !ok {
		return
	}
	h := blake3.Sum256(b)
	r.mu.Lock()
	if w := r.byHash[h]; w != nil {
		w.Superseded = true
	}
	r.mu.Unlock()
}

// userWrite writes content at p on d and records the write.
func (r *runner) userWrite(d *Device, op Op, sub int) (*write, error) {
	content := Content(r.cfg.Seed, op.Step, sub, d.Index, op.Size)
	old, had, err := userWriteFile(d.FS, op.Path, content)
	if err != nil {
		return nil, nil // the path is a directory here, say: not a write
	}
	r.supersede(old, had)
	w := &write{Key: fmt.Sprintf("%d.%d", op.Step, sub), Step: op.Step, Dev: d.Index, Path: op.Path, Hash: blake3.Sum256(content), Size: len(content)}
	r.mu.Lock()
	r.writes = append(r.writes, w)
	r.byKey[w.Key] = w
	r.byHash[w.Hash] = w
	r.mu.Unlock()
	return w, nil
}

// scanAck scans d and, if the scan returned without error, marks ws
// acknowledged.
func (r *runner) scanAck(d *Device, ws ...*write) error {
	n := d.Node()
	if n == nil {
		return nil
	}
	if err := n.Scan(r.ctx); err != nil {
		return fmt.Errorf("scan on d%d: %w", d.Index, err)
	}
	now := time.Now()
	r.mu.Lock()
	for _, w := range ws {
		if w != nil {
			w.Acked, w.AckedAt = true, now
		}
	}
	r.mu.Unlock()
	return nil
}

// exec carries out one op.
func (r *runner) exec(op Op) error {
	r.mu.Lock()
	r.ops[op.Kind]++
	r.mu.Unlock()
	switch op.Kind {
	case OpWrite:
		d := r.userDevice(op.Dev)
		if d == nil {
			r.skip()
			return nil
		}
		w, err := r.userWrite(d, op, 0)
		if err != nil || w == nil {
			return err
		}
		return r.scanAck(d, w)
	case OpConcurrent:
		a, b := r.userDevice(op.Dev), r.userDevice(op.Dev2)
		if a == nil || b == nil {
			r.skip()
			return nil
		}
		wa, err := r.userWrite(a, op, 0)
		if err != nil {
			return err
		}
		wb, err := r.userWrite(b, op, 1)
		if err != nil {
			return err
		}
		var wg sync.WaitGroup
		var ea, eb error
		wg.Go(func() { ea = r.scanAck(a, wa) })
		wg.Go(func() { eb = r.scanAck(b, wb) })
		wg.Wait()
		if ea != nil {
			return ea
		}
		return eb
	case OpDelete, OpRename:
		d := r.userDevice(op.Dev)
		if d == nil {
			r.skip()
			return nil
		}
		files := Files(d.FS)
		if len(files) == 0 {
			r.skip()
			return nil
		}
		p := files[op.Pick%uint64(len(files))]
		if op.Kind == OpDelete {
			old, had, err := userRemoveFile(d.FS, p)
			if err != nil {
				r.skip()
				return nil
			}
			r.supersede(old, had)
		} else {
			if p == op.To {
				r.skip()
				return nil
			}
			old, had, err := userRenameFile(d.FS, p, op.To)
			if err != nil {
				r.skip()
				return nil
			}
			r.supersede(old, had)
		}
		return r.scanAck(d)
	case OpPartition:
		r.c.Net.HealAll()
		for _, e := range r.c.Edges() {
			if side(op.Side, e[0]) != side(op.Side, e[1]) {
				a, b := r.c.Device(e[0]), r.c.Device(e[1])
				if err := r.c.Net.Cut(a.Peer, b.Peer); err != nil {
					return err
				}
			}
		}
	case OpHeal:
		r.c.Net.HealAll()
		r.c.ConnectEdges(r.ctx)
	case OpRestart:
		d := r.userDevice(op.Dev)
		if d == nil {
			r.skip()
			return nil
		}
		r.saveTraffic(d)
		if err := r.c.Stop(d, true); err != nil {
			return err
		}
		r.mu.Lock()
		r.pendingUp = append(r.pendingUp, d)
		r.mu.Unlock()
	case OpJoin:
		if r.userDevice(0) == nil {
			r.skip()
			return nil
		}
		d, err := r.c.Join(r.ctx, false)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(op.Step)))
		for i := range d.Index {
			if r.cfg.Degree <= 0 || rng.IntN(d.Index) < r.cfg.Degree {
				if err := r.c.AddEdge(d.Index, i); err != nil {
					return err
				}
			}
		}
		if err := r.c.AddEdge(d.Index, 0); err != nil {
			return err
		}
		if err := r.c.Start(d); err != nil {
			return err
		}
		r.c.ConnectEdges(r.ctx)
	case OpLeave:
		d := r.userDevice(op.Dev)
		if d == nil {
			r.skip()
			return nil
		}
		// Leave only once another device holds every entry of this one
		// (the node's "unsafe" count is zero), as a user is told to.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if n := d.Node(); n == nil || unsafeCount(n) == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := d.Node(); n != nil && unsafeCount(n) > 0 {
			fmt.Fprintf(r.log, "step %d: d%d leaves with %d entries held nowhere else\n", op.Step, d.Index, unsafeCount(n))
		}
		r.saveTraffic(d)
		return r.c.Leave(d)
	}
	return nil
}

// settle waits until every present device has the same tree and nothing
// pending, three polls in a row. It returns whether that happened and,
// if not, a description of the difference.
func (r *runner) settle(limit time.Duration) (bool, string) {
	deadline := time.Now().Add(limit)
	stable := 0
	var last string
	for time.Now().Before(deadline) {
		same, desc := r.identical()
		idle, busy := r.idleWhy()
		if same && !idle {
			desc = busy
		}
		if same && idle {
			if stable++; stable >= 3 {
				return true, ""
			}
		} else {
			stable = 0
		}
		last = desc
		time.Sleep(300 * time.Millisecond)
	}
	return false, last
}

// idleWhy is idle with a description of the first device that has work
// pending, and on what.
func (r *runner) idleWhy() (bool, string) {
	for i, d := range r.devices() {
		n := d.Node()
		if n == nil {
			continue
		}
		for _, f := range n.Status().Folders {
			if f.Pending > 0 || f.PendingApply > 0 || f.PendingFetch > 0 {
				return false, fmt.Sprintf("device %d: %d to apply, %d to fetch, errors %v", i, f.PendingApply, f.PendingFetch, f.Errors)
			}
		}
	}
	return true, ""
}

// identical compares the trees of every present device with the first's.
func (r *runner) identical() (bool, string) {
	var ref map[string]Item
	refDev := -1
	for _, d := range r.devices() {
		if d.Left() {
			continue
		}
		t, err := Tree(d.FS)
		if err != nil {
			return false, err.Error()
		}
		if ref == nil {
			ref, refDev = t, d.Index
			continue
		}
		if diff := diffTrees(ref, t); diff != "" {
			return false, fmt.Sprintf("d%d vs d%d: %s; %s", refDev, d.Index, diff, r.describe(ref, t))
		}
	}
	return true, ""
}

// describe names, for the first differing path, the write each present
// device shows there.
func (r *runner) describe(a, b map[string]Item) string {
	var p string
	for q, ia := range a {
		if ib := b[q]; ia != ib && (p == "" || q < p) {
			p = q
		}
	}
	for q := range b {
		if _, ok := a[q]; !ok && (p == "" || q < p) {
			p = q
		}
	}
	var out []string
	for _, d := range r.devices() {
		if d.Left() {
			continue
		}
		k := parseHeader(readHead(d.FS, p, 64))
		if k == "" {
			k = "-"
		}
		out = append(out, fmt.Sprintf("d%d:%s", d.Index, k))
	}
	return p + " holds " + strings.Join(out, " ")
}

// diffTrees describes the first few differences between two trees.
func diffTrees(a, b map[string]Item) string {
	var out []string
	for p, ia := range a {
		if ib, ok := b[p]; !ok {
			out = append(out, "only in first: "+p)
		} else if ia != ib {
			out = append(out, "differs: "+p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, "only in second: "+p)
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d more", len(out)-5))
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}

// sample records, every so often, which write each present device shows
// at each path: the first time a device shows a write is when it
// observed it.
func (r *runner) sample(ctx context.Context, start time.Time) {
	every := 100 * time.Millisecond
	if len(r.devices()) > 50 {
		every = 500 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for _, d := range r.devices() {
			if d.Left() {
				continue
			}
			for _, p := range Files(d.FS) {
				k := parseHeader(readHead(d.FS, p, 64))
				if k == "" {
					continue
				}
				r.mu.Lock()
				m := r.firstSeen[k]
				if m == nil {
					m = map[int]time.Time{}
					r.firstSeen[k] = m
				}
				if _, ok := m[d.Index]; !ok {
					m[d.Index] = now
				}
				r.mu.Unlock()
			}
		}
		r.mu.Lock()
		var want, got int
		present := len(r.devices())
		for _, w := range r.writes {
			if !w.Acked {
				continue
			}
			want += present - 1
			for dev := range r.firstSeen[w.Key] {
				if dev != w.Dev {
					got++
				}
			}
		}
		if want > 0 {
			r.curve = append(r.curve, Point{T: now.Sub(start).Seconds(), Share: min(1, float64(got)/float64(want))})
		}
		r.mu.Unlock()
	}
}
