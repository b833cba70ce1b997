package node

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/observe"
	"github.com/weftsync/weft/protocol/keys"
)

// monitor watches the node's events for what status, doctor and metrics
// report beyond the vaults' own state: counters, the entries that became
// safe, per-peer throughput, and what scans skipped. The local API owns it; it exists
// only while the API runs.
type monitor struct {
	n       *Node
	metrics *api.Metrics

	mu   sync.Mutex // guards safe
	safe map[*vault]uint64
	// rates and scans have their own locks (node/observe).
	rates observe.Rates
	scans observe.ScanNotes

	problems api.ProblemTracker // errors[] items and states, published as events (node/api/problems.go)
	statusMu sync.Mutex         // held by Node.Status while the monitor runs
}

func newMonitor(n *Node) *monitor {
	m := &monitor{
		n: n, safe: map[*vault]uint64{},
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
	tick := time.NewTicker(observe.SampleEvery)
	defer tick.Stop()
	var idle idleTrim // memrelease.go
	for {
		m.sample()
		st := m.n.Status() // publishes new and cleared problems (node/api/problems.go)
		if idle.step(st, time.Now()) {
			m.n.trimIdle()
		} else {
			releaseIfIdle(st)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *monitor) sample() {
	sent, recv := map[keys.DeviceID]int64{}, map[keys.DeviceID]int64{}
	m.n.mu.Lock()
	for d, ps := range m.n.peers {
		sent[d] = ps.counters.bytesSent.Load()
		recv[d] = ps.counters.bytesReceived.Load()
	}
	m.n.mu.Unlock()
	m.rates.Add(time.Now(), sent, recv)
}

// throughput is a peer's bytes per second sent and received over the last
// minute (or since the API started, if less).
func (m *monitor) throughput(d keys.DeviceID) (sent, recv float64, over time.Duration) {
	m.sample()
	return m.rates.Throughput(d)
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
	return api.NewMetrics(metricsSource{apiBackend{n, n.members}}, extra...)
}

// metricsSource is the node as its metrics read it (api.MetricsSource).
type metricsSource struct{ apiBackend }

// FolderGauges are each open folder's directories and unwatched subtrees.
func (s metricsSource) FolderGauges() map[string]api.FolderGauges {
	out := map[string]api.FolderGauges{}
	for _, v := range s.vaultsNow() {
		g := api.FolderGauges{Dirs: v.counts().dirs}
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
