package node

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"

	"github.com/weftsync/weft/node/api"
)

// Returning memory after a burst. Go's runtime gives freed heap back to
// the operating system slowly (its background scavenger), so after a first
// sync or a large rescan an idle agent stayed at close to its peak RSS for
// minutes: 478 MB for a minute after a first scan of 100,000 small files
// whose live heap was 120 MB (docs/benchmarks.md, "Footprint"). Once every
// folder is settled (in sync, or offline with nothing to do) and the heap
// holds more than releaseSlack of freed but unreturned memory, the monitor
// returns it at once. That costs one collection per burst, not one per
// sample: right after a release there is nothing left to return.

// releaseSlack is how much freed, unreturned heap an idle agent may keep.
const releaseSlack = 16 << 20

// heapFree is the heap memory that is free and not yet returned to the OS.
func heapFree() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// settled reports whether no folder of st has work in hand.
func settled(st api.Status) bool {
	for _, f := range st.Folders {
		if f.State != "in-sync" && f.State != "offline" {
			return false
		}
	}
	return true
}

// releaseIfIdle returns freed heap to the OS when the agent is settled
// and holds more than releaseSlack of it. It reports whether it did.
func releaseIfIdle(st api.Status) bool {
	if !settled(st) || heapFree() <= releaseSlack {
		return false
	}
	debug.FreeOSMemory()
	return true
}
