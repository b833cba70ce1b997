package node

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// The collector's target while vaults open and run their first scan.
//
// Go collects when the heap has grown by GOGC percent (100 by default)
// over what the last collection left live, so an agent's peak RSS is
// about twice the live heap of its busiest moment. The busiest moments of
// a large folder are the start: opening a vault reads its whole log and
// rebuilds the version graph and the folder index (a restart at 100,000
// files allocates some 300 MB to end with about 70 MB live), and the
// first scan of a new folder hashes, encrypts and records every file. So
// while any vault of the process is opening or running its first scan,
// the collector aims at startGCPercent instead, and the percent in force
// before comes back once the last one is done: more, shorter collections
// during the start (their CPU is measured in docs/benchmarks.md,
// "Footprint at 100,000 small files"), a lower peak, and the usual
// trade-off for the agent's long idle life after it.
//
// Opening a large vault ends with one collection (collectAfterOpen): all
// the open allocated is garbage by then but what it built, and a heap
// goal set from the live heap during the open (the graph and index half
// built, plus a log segment and the graph snapshot being read) rather
// than after it let a restart's rescan grow the heap further.
//
// A user who set GOGC or GOMEMLIMIT in the environment chose the
// collector's policy: it is left alone.

// startGCPercent is the collector's target during the start (GOGC=50).
const startGCPercent = 50

// startGC counts the vaults of the process that are opening or scanning
// for the first time; it is process-wide because the collector is.
var startGC struct {
	mu     sync.Mutex
	busy   int
	prev   int  // the percent to restore
	active bool // the percent was lowered (not when the user set GOGC or GOMEMLIMIT)
}

// userGCPolicy reports whether the environment sets the collector's
// policy (read by the runtime at start).
func userGCPolicy() bool {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	return gogc || limit
}

// startBusy notes the start of a vault's open or first scan; call the
// function it returns when that is done (once).
func startBusy() (done func()) {
	startGC.mu.Lock()
	if startGC.busy == 0 && !userGCPolicy() {
		startGC.prev = debug.SetGCPercent(startGCPercent)
		startGC.active = true
	}
	startGC.busy++
	startGC.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			startGC.mu.Lock()
			startGC.busy--
			if startGC.busy == 0 && startGC.active {
				debug.SetGCPercent(startGC.prev)
				startGC.active = false
			}
			startGC.mu.Unlock()
		})
	}
}

// collectAfterOpenMin is the fewest versions for which an open ends with
// a collection: below it the open's garbage is small.
const collectAfterOpenMin = 10_000

// collectAfterOpen collects once after a vault of versions versions has
// opened (see above), unless the user set the collector's policy.
func collectAfterOpen(versions int) {
	if versions >= collectAfterOpenMin && !userGCPolicy() {
		runtime.GC()
	}
}
