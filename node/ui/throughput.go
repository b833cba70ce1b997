package ui

import (
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
)

// throughput measures each peer's bytes per second between two looks at
// the status (the devices page's loads; it reloads itself every few
// seconds): the status counts bytes since the agent started, and the
// difference over the time between two samples is the rate.
type throughput struct {
	mu   sync.Mutex
	at   time.Time
	last map[string][2]int64 // peer ID -> received, sent at the last sample
}

// peerRate is a peer's throughput, in bytes per second.
type peerRate struct {
	Received, Sent float64
}

// maxRateGap: samples further apart than this measure nothing useful (a
// page left open overnight); the next load starts afresh.
const maxRateGap = time.Minute

// sample records the peers' counters at now and returns each peer's
// rate since the previous sample, when there was one recent enough.
func (t *throughput) sample(now time.Time, peers []api.PeerStatus) map[string]peerRate {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]peerRate{}
	dt := now.Sub(t.at).Seconds()
	fresh := t.last != nil && dt > 0 && now.Sub(t.at) <= maxRateGap
	next := make(map[string][2]int64, len(peers))
	for _, p := range peers {
		cur := [2]int64{p.BytesReceived, p.BytesSent}
		next[p.ID] = cur
		if prev, ok := t.last[p.ID]; ok && fresh && cur[0] >= prev[0] && cur[1] >= prev[1] {
			out[p.ID] = peerRate{Received: float64(cur[0]-prev[0]) / dt, Sent: float64(cur[1]-prev[1]) / dt}
		}
	}
	t.at, t.last = now, next
	return out
}
