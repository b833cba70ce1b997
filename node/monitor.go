package node

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/keys"
)

// monitor watches the node's events for what status, doctor and metrics
// report beyond the vaults' own state: counters, the entries that became
// safe, per-peer throughput, and what scans skipped. The local API owns it; it exists
// only while the API runs.
type monitor struct {
	n       *Node
	metrics *api.Metrics

	mu      sync.Mutex // guards the fields below
	safe    map[*vault]uint64
	samples []counterSample // newest last, at most maxSamples
	scans   map[*vault]*scanNote

	problems api.ProblemTracker // errors[] items and states, published as events (node/api/problems.go)
	statusMu sync.Mutex         // held by Node.Status while the monitor runs
}

// counterSample is every peer's byte counters at one time.
type counterSample struct {
	at         time.Time
	sent, recv map[keys.DeviceID]int64
}

// scanNote is what the last scans of a folder could not take.
type scanNote struct {
	skipped        map[string]string    // path -> why, from the last scan covering it
	unsettled      map[string]time.Time // path -> when it was last found changing
	watcherRescans int
	watcherFailed  string
}

const (
	maxSamples  = 13 // one minute at sampleEvery
	sampleEvery = 5 * time.Second
)

func newMonitor(n *Node) *monitor {
	m := &monitor{
		n: n, safe: map[*vault]uint64{}, scans: map[*vault]*scanNote{},
	}
	for _, v := range n.vaultsNow() {
		m.safe[v] = v.heldElsewhere()
	}
	m.metrics = n.newMetrics()
	n.events.Observe(m.observe)
	return m
}

// run samples the peers' counters for throughput until ctx ends.
func (m *monitor) run(ctx context.Context) {
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		m.sample()
		st := m.n.Status() // publishes new and cleared problems (node/api/problems.go)
		releaseIfIdle(st)  // memrelease.go
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *monitor) sample() {
	s := counterSample{at: time.Now(), sent: map[keys.DeviceID]int64{}, recv: map[keys.DeviceID]int64{}}
	m.n.mu.Lock()
	for d, ps := range m.n.peers {
		s.sent[d] = ps.counters.bytesSent.Load()
		s.recv[d] = ps.counters.bytesReceived.Load()
	}
	m.n.mu.Unlock()
	m.mu.Lock()
	m.samples = append(m.samples, s)
	if len(m.samples) > maxSamples {
		m.samples = m.samples[len(m.samples)-maxSamples:]
	}
	m.mu.Unlock()
}

// throughput is a peer's bytes per second sent and received over the last
// minute (or since the API started, if less).
func (m *monitor) throughput(d keys.DeviceID) (sent, recv float64, over time.Duration) {
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.samples) < 2 {
		return 0, 0, 0
	}
	a, b := m.samples[0], m.samples[len(m.samples)-1]
	over = b.at.Sub(a.at)
	if over <= 0 {
		return 0, 0, 0
	}
	return float64(b.sent[d]-a.sent[d]) / over.Seconds(), float64(b.recv[d]-a.recv[d]) / over.Seconds(), over
}

func (m *monitor) vaultByFolder(folder string) *vault {
	for _, v := range m.n.vaultsNow() {
		if v.cfg.Folder == folder {
			return v
		}
	}
	return nil
}

// observe sees every event (synchronously, from publish).
func (m *monitor) observe(ev api.Event) []api.Event {
	m.metrics.Count(ev)
	switch ev.Type {
	case api.EventPeerStatus:
		v := m.vaultByFolder(ev.Folder)
		if v == nil {
			return nil
		}
		held := v.heldElsewhere()
		m.mu.Lock()
		before := m.safe[v]
		if held > before {
			m.safe[v] = held
		}
		m.mu.Unlock()
		if held > before {
			m.metrics.CountSafe(ev.Folder, held-before)
			return []api.Event{{Type: api.EventEntrySafe, Folder: ev.Folder, Peer: ev.Peer, Seq: held, Count: int(held - before)}}
		}
	}
	return nil
}

func (m *monitor) scanNoteLocked(v *vault) *scanNote {
	s, ok := m.scans[v]
	if !ok {
		s = &scanNote{skipped: map[string]string{}, unsettled: map[string]time.Time{}}
		m.scans[v] = s
	}
	return s
}

// noteScanResult records what a scan of v (of paths; nil is the whole
// folder) could not take, replacing what earlier scans said about the
// same paths.
func (m *monitor) noteScanResult(v *vault, paths []string, res folder.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scanNoteLocked(v)
	covered := func(p string) bool {
		if paths == nil {
			return true
		}
		for _, q := range paths {
			if q == "" || p == q || len(p) > len(q) && p[:len(q)] == q && p[len(q)] == '/' {
				return true
			}
		}
		return false
	}
	for p := range s.skipped {
		if covered(p) {
			delete(s.skipped, p)
		}
	}
	for p := range s.unsettled {
		if covered(p) {
			delete(s.unsettled, p)
		}
	}
	for _, sk := range res.Skipped {
		s.skipped[sk.Path] = sk.Err.Error()
	}
	now := time.Now()
	for _, p := range res.Unsettled {
		s.unsettled[p] = now
	}
}

// scanProblems returns copies of what scans of v skipped and found
// unsettled.
func (m *monitor) scanProblems(v *vault) (skipped map[string]string, unsettled []string, rescans int, watcherFailed string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scanNoteLocked(v)
	skipped = make(map[string]string, len(s.skipped))
	for p, r := range s.skipped {
		skipped[p] = r
	}
	for p := range s.unsettled {
		unsettled = append(unsettled, p)
	}
	return skipped, unsettled, s.watcherRescans, s.watcherFailed
}

// monitor returns the running API's monitor, or nil.
func (n *Node) monitor() *monitor {
	if n.api == nil {
		return nil
	}
	return n.api.mon
}

// newMetrics makes the node's metrics (node/api), which read the node's
// state at each scrape.
func (n *Node) newMetrics() *api.Metrics {
	var extra []prometheus.Collector
	if n.strangers != nil {
		extra = append(extra, n.strangers.refused.Collector("weft_refused_streams_total"))
	}
	return api.NewMetrics(metricsSource{n}, extra...)
}

// metricsSource is the node as its metrics read it (api.MetricsSource).
type metricsSource struct{ *Node }

// FolderGauges are each open folder's directories and unwatched subtrees.
func (s metricsSource) FolderGauges() map[string]api.FolderGauges {
	out := map[string]api.FolderGauges{}
	for _, v := range s.vaultsNow() {
		g := api.FolderGauges{Dirs: v.view().dirs}
		if un, whole, _ := v.fallback.State(); whole {
			g.Unwatched = -1
		} else {
			g.Unwatched = un
		}
		out[v.cfg.Folder] = g
	}
	return out
}

// Counters are the node's chunk and version-store counters.
func (s metricsSource) Counters() api.Counters {
	return api.Counters{
		ChunksServed:      uint64(s.stats.chunksServed.Load()),
		ChunksFetched:     uint64(s.stats.chunksFetched.Load()),
		ChunkBytesFetched: uint64(s.stats.chunkBytesFetched.Load()),
		VersionScrubBytes: s.stats.versionScrubBytes.Load(),
		VersionCorrupt:    s.stats.versionCorrupt.Load(),
	}
}
