package relay

import (
	"context"
	"runtime/debug"
	"time"
)

// idleCheck is how often the relay looks whether it has gone idle.
const idleCheck = 20 * time.Second

// idleLoop hands memory back to the operating system once the relay has
// been idle for a whole check after some activity. A relay on a small VPS
// spends most of its life idle; after a burst (a first sync of thousands
// of notes) the Go runtime keeps the freed heap mapped for minutes, which
// shows as resident memory the VPS could use. FreeOSMemory costs one
// garbage collection, paid only once per burst.
func (r *Relay) idleLoop(ctx context.Context) {
	tick := time.NewTicker(idleCheck)
	defer tick.Stop()
	last := r.stats.frames.Load()
	busy := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := r.stats.frames.Load()
		switch {
		case now != last:
			busy = true
		case busy:
			debug.FreeOSMemory()
			busy = false
		}
		last = now
	}
}
