package node

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/engine"
)

// Returning memory after a burst. Go's runtime gives freed heap back to
// the operating system slowly (its background scavenger), so after a first
// sync or a large rescan an idle agent stayed at close to its peak RSS for
// minutes: 478 MB for a minute after a first scan of 100,000 small files
// whose live heap was 120 MB (docs/benchmarks.md, "Footprint"). Once every
// folder is settled (in sync, or offline with nothing to do) and the heap
// holds more than releaseSlack it could return, the monitor returns it at
// once. That costs one collection per burst, not one per sample: right
// after a release there is nothing left to return.
//
// What the heap could return is its free memory and also the garbage the
// burst left since the last collection: an idle agent allocates little,
// so no collection runs for minutes (until the runtime's forced one every
// two minutes), and that garbage stays resident. After B1's 10,000 notes
// the receiver's heap held 31 MB of objects over 19 MB live, with less
// than releaseSlack free, so nothing was returned (docs/benchmarks.md,
// "Where an idle agent's live heap is").

// releaseSlack is how much returnable heap an idle agent may keep.
const releaseSlack = 16 << 20

// heapMetrics are the runtime metrics heapFree and heapReleasable read.
var heapMetrics = []string{
	"/memory/classes/heap/free:bytes",    // free, not yet returned
	"/memory/classes/heap/objects:bytes", // live or dead, not yet swept
	"/gc/heap/live:bytes",                // live as of the last collection
}

func readHeap() (free, objects, live uint64) {
	s := make([]rtmetrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	rtmetrics.Read(s)
	v := make([]uint64, len(s))
	for i := range s {
		if s[i].Value.Kind() == rtmetrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return v[0], v[1], v[2]
}

// heapFree is the heap memory that is free and not yet returned to the OS.
func heapFree() uint64 {
	free, _, _ := readHeap()
	return free
}

// heapReleasable is what a collection and a release could give back: the
// free heap plus what the heap's objects have grown by since the last
// collection found the live heap (garbage, unless the growth is still
// held, which the collection then finds).
func heapReleasable() uint64 {
	free, objects, live := readHeap()
	if objects > live {
		return free + objects - live
	}
	return free
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

// releaseIfIdle returns freed heap, and the garbage left since the last
// collection, to the OS when the agent is settled and could return more
// than releaseSlack. It reports whether it did.
func releaseIfIdle(st api.Status) bool {
	return settled(st) && releaseAbove(releaseSlack)
}

// releaseAbove collects and returns the heap to the OS when it could
// return more than slack, and reports whether it did.
func releaseAbove(slack uint64) bool {
	if heapReleasable() <= slack {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// Letting go of what only work in hand needs. A vault keeps some things
// for a while after a burst: the inline bytes of versions just received,
// for the applier (logview's cache, up to 8 MiB; 1.8 MB after B1's 10,000
// notes, docs/benchmarks.md "Where an idle agent's live heap is"), and
// the engine's applies and move hashes of the last few seconds, in maps
// that keep the room of their largest size (2.9 MB after B1 on the
// receiver; engine.Engine.Trim). Once every folder has been settled for
// trimAfter, the monitor drops them (trimIdle), once per settled spell,
// and returns the heap the spell's work left when that is more than
// trimSlack. Nothing is lost: a version's inline bytes are read back from
// the log when needed (withInline).

// trimAfter is how long every folder must have been settled before the
// node trims: longer than the engine's windows (engine.DeleteWindow,
// engine.ApplyRaceWindow), so what they hold has expired.
const trimAfter = 10 * time.Second

// idleTrim follows the node's settled spells for the monitor (one
// goroutine: not safe for concurrent use).
type idleTrim struct {
	since   time.Time // when the spell began; zero while a folder has work
	trimmed bool      // the node trimmed in this spell
}

// step is one sample of st at now. It reports whether the node should
// trim now: every folder has been settled for trimAfter, and the node has
// not trimmed since they settled.
func (s *idleTrim) step(st api.Status, now time.Time) bool {
	if !settled(st) {
		*s = idleTrim{}
		return false
	}
	if s.since.IsZero() {
		s.since = now
	}
	if s.trimmed || now.Sub(s.since) < trimAfter {
		return false
	}
	s.trimmed = true
	return true
}

// trimSlack is the returnable heap above which the idle trim returns it
// to the OS: a burst's garbage (14 to 19 MiB after B1) is returned once
// its spell settles, while a spell after a small edit does not cost a
// collection and a release each (a collection of a 100,000-file vault's
// heap is tens of ms of CPU; issue 16's idle target is 30 ms a minute).
const trimSlack = 4 << 20

// trimIdle drops what the node's vaults hold only for work in hand, then
// returns the heap to the OS if it could return more than trimSlack; it
// reports whether it did. It must not be called with a vault's lock held
// (it waits for each vault's engine loop).
func (n *Node) trimIdle() (released bool) {
	now := n.now()
	for _, v := range n.vaultsNow() {
		v.view.Inline.Clear()
		v.engine.Do(func(e *engine.Engine) { e.Trim(now) })
	}
	return releaseAbove(trimSlack)
}
