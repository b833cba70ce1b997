package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/entry"
)

// runB7: what a relay costs when nothing happens, and what each retained
// version costs it on disk.
//
//  1. A fresh relay idles for the scale's idle window: RSS now and CPU
//     seconds per minute.
//  2. B1's notes go A -> relay (until A's unsafe 0), then B starts and
//     gets them; with A and B still connected, the relay idles again.
//  3. B stops; A appends 1 KiB to the scale's number of distinct notes at
//     once; once A says unsafe 0 (the relay holds them), the growth of the
//     relay's home beyond the versions' data (stored chunk bytes, and the
//     bytes of files small enough to be inline in an entry), per edit, is
//     the cost of a retained version.
func runB7(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	r, err := startRelay(rc)
	if err != nil {
		return err
	}
	defer r.kill()
	if err := idle(rc, r, "fresh", z.idle); err != nil {
		return err
	}

	a, b, err := relayPair(rc, r)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	if err := waitRelayUp(rc.ctx, a); err != nil {
		return err
	}
	ns := makeNotes(z.notes, 2<<10, 60, uint64(rc.run)+1)
	if err := ns.write(a.folder); err != nil {
		return err
	}
	if _, err := upload(rc.ctx, a, len(ns), z.syncTimeout); err != nil {
		return err
	}
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	if _, err := waitNotes(b.folder, ns, z.syncTimeout); err != nil {
		return fmt.Errorf("device B: %w\n%s", err, b.logTail())
	}
	if _, err := b.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, indexed(len(ns))); err != nil {
		return err
	}
	if err := idle(rc, r, "after B1", z.idle); err != nil {
		return err
	}

	// B goes away so that A's unsafe 0 below means the relay holds the
	// edits (another connected device would count as well).
	if err := b.stop(); err != nil {
		return err
	}
	m0, err := r.scrape(rc.ctx)
	if err != nil {
		return err
	}
	h0 := dirSize(r.home)
	u0, err := r.usage()
	if err != nil {
		return err
	}
	rels := make([]string, 0, len(ns))
	for rel := range ns {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	edits := min(z.relayEdits, len(rels))
	add := makeNotes(1, 1<<10, 1, uint64(rc.run)+700)["folder00/note00000.md"]
	for _, rel := range rels[:edits] {
		f, err := os.OpenFile(filepath.Join(a.folder, filepath.FromSlash(rel)), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(add)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	start := time.Now()
	want := ns.bytes() + int64(edits*len(add))
	if _, err := a.waitState(rc.ctx, z.syncTimeout, 20*time.Millisecond, func(st api.Status) bool {
		return safe(len(ns))(st) && st.Folders[0].Bytes == want
	}); err != nil {
		return fmt.Errorf("device A recording the edits and uploading them: %w", err)
	}
	took := time.Since(start)
	m1, err := relayHolds(rc.ctx, r, m0[mEntries]+1, z.syncTimeout)
	if err != nil {
		return fmt.Errorf("%w\nA: %s", err, a.logTail())
	}
	u1, err := r.usage()
	if err != nil {
		return err
	}
	h1 := dirSize(r.home)
	dStored := m1[mStored] - m0[mStored]
	// A version's data is its chunks, or its bytes inline in the entry
	// body for a file of at most entry.InlineLimit bytes (every edited
	// note here).
	var inline float64
	if n := len(ns[rels[0]]) + len(add); n <= entry.InlineLimit {
		inline = float64(edits * n)
	}
	rc.add("edits", "count", float64(edits))
	rc.add("entries stored for the edits (a log entry carries many versions)", "count", m1[mEntries]-m0[mEntries])
	rc.add("edits -> A unsafe 0", "s", took.Seconds())
	rc.add("CPU relay, edits", "s", u1.CPUSeconds-u0.CPUSeconds)
	rc.add("RSS relay after edits", "MiB", float64(u1.RSS)/(1<<20))
	rc.add("peak RSS relay", "MiB", float64(u1.PeakRSS)/(1<<20))
	rc.add("relay home growth per edit", "bytes", float64(h1-h0)/float64(edits))
	rc.add("chunk bytes stored per edit", "bytes", dStored/float64(edits))
	rc.add("inline bytes per edit", "bytes", inline/float64(edits))
	rc.add("bytes on disk per retained version beyond its data", "bytes", (float64(h1-h0)-dStored-inline)/float64(edits))
	rc.add("relay home / note bytes", "x", float64(h1)/float64(ns.bytes()+int64(edits*len(add))))
	rc.note("idle windows of %s; CPU per minute = CPU seconds in the window x 60 / window; RSS = VmRSS at the window's end", z.idle)
	rc.note("'after B1': A and B connected to the relay and in sync; then B stopped; edits: 1 KiB appended to %d distinct notes at once on A, each a retained version, until A's status counts their bytes and says unsafe 0", edits)
	rc.note("beyond its data = (growth of the relay's home - growth of its stored chunk bytes - the edited notes' bytes, held inline in the encrypted entry bodies) / edits")
	rc.note("home sizes are the sum of regular files under the relay's home (apparent sizes), read while it runs")
	if err := a.stop(); err != nil {
		return err
	}
	return r.stop()
}

// idle records the relay's RSS at the end of an idle window of d, and its
// CPU over the window, scaled to a minute.
func idle(rc *runCtx, r *relayProc, label string, d time.Duration) error {
	u0, err := r.usage()
	if err != nil {
		return err
	}
	select {
	case <-time.After(d):
	case <-rc.ctx.Done():
		return rc.ctx.Err()
	}
	u1, err := r.usage()
	if err != nil {
		return err
	}
	rc.add("idle RSS relay, "+label, "MiB", float64(u1.RSS)/(1<<20))
	rc.add("idle CPU relay, "+label, "s/min", (u1.CPUSeconds-u0.CPUSeconds)*60/d.Seconds())
	return nil
}

// relayHolds polls the relay's metrics until it stores at least entries
// entries and wants no chunk.
func relayHolds(ctx context.Context, r *relayProc, entries float64, limit time.Duration) (map[string]float64, error) {
	deadline := time.Now().Add(limit)
	var m map[string]float64
	var err error
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err = r.scrape(ctx)
		if err == nil && m[mEntries] >= entries && m[mWanted] == 0 {
			return m, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("relay: %v entries (want %v), %v chunks wanted within %s (err %v)", m[mEntries], entries, m[mWanted], limit, err)
}
