package bench

import (
	"time"
)

// runB10: A and B hold n files in sync; B is stopped and started again;
// the clock runs from B's launch until its status says in sync with its
// initial scan done.
func runB10(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	a, b, ns, err := pairWithNotes(rc, z.restartSet, uint64(rc.run)+21)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	if _, err := waitNotes(b.folder, ns, z.syncTimeout); err != nil {
		return err
	}
	if _, err := b.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, inSync(len(ns))); err != nil {
		return err
	}
	if err := b.stop(); err != nil {
		return err
	}
	sentA0, recvA0, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	ready := time.Now()
	if _, err := b.waitState(rc.ctx, z.syncTimeout, 5*time.Millisecond, inSync(len(ns))); err != nil {
		return err
	}
	inSyncAt := time.Now()
	// B's counters start at zero with the new process.
	sentB, recvB, err := b.wire(rc.ctx)
	if err != nil {
		return err
	}
	sentA, recvA, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	u, err := b.usage()
	if err != nil {
		return err
	}
	rc.add("in sync from launch", "s", inSyncAt.Sub(start).Seconds())
	rc.add("in sync from ready", "s", inSyncAt.Sub(ready).Seconds())
	rc.add("sent by B", "KiB", float64(sentB)/1024)
	rc.add("received by B", "KiB", float64(recvB)/1024)
	rc.add("sent by A", "KiB", float64(sentA-sentA0)/1024)
	rc.add("received by A", "KiB", float64(recvA-recvA0)/1024)
	rc.add("CPU B", "s", u.CPUSeconds)
	rc.add("peak RSS B", "MiB", float64(u.PeakRSS)/(1<<20))
	rc.note("in sync: status folder state in-sync, initial_scan_done, nothing pending, every file counted (needs the peer connected)")
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}
