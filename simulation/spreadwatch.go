package simulation

import (
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
)

// arrivals timestamps, from each node's own event stream, when it
// received its first log entry and when it applied a path. Polling every
// device's folder is not precise enough at scale: with hundreds of nodes
// on two shared cores one pass of the sampler took seconds (S2, 200
// devices: 6 s), and every arrival in that pass was stamped at its end.
// An event carries the time the node published it, right after the apply.
type arrivals struct {
	path    string
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex // guards the slices
	entry   []time.Time
	applied []time.Time
}

// watchArrivals subscribes to the events of devices 1 to n-1.
func watchArrivals(c *Cluster, n int, path string) *arrivals {
	a := &arrivals{path: path, stop: make(chan struct{}), entry: make([]time.Time, n), applied: make([]time.Time, n)}
	for i := 1; i < n; i++ {
		nd := c.Device(i).Node()
		if nd == nil {
			continue
		}
		ch, cancel := nd.Subscribe()
		a.wg.Go(func() {
			defer cancel()
			for {
				select {
				case <-a.stop:
					return
				case ev := <-ch:
					a.note(i, ev)
				}
			}
		})
	}
	return a
}

func (a *arrivals) note(i int, ev api.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case ev.Type == api.EventEntryReceived && a.entry[i].IsZero():
		a.entry[i] = ev.Time
	case ev.Type == api.EventApplied && ev.Path == a.path && a.applied[i].IsZero():
		a.applied[i] = ev.Time
	}
}

// appliedAt returns when device i applied the path, if its event came.
func (a *arrivals) appliedAt(i int) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied[i], !a.applied[i].IsZero()
}

// lastEntry returns when the last device that received an entry got its
// first one, and how many did.
func (a *arrivals) lastEntry() (time.Time, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var last time.Time
	got := 0
	for _, t := range a.entry {
		if !t.IsZero() {
			got++
			if t.After(last) {
				last = t
			}
		}
	}
	return last, got
}

// close ends every subscription.
func (a *arrivals) close() {
	close(a.stop)
	a.wg.Wait()
}
