package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runB3Relay: one large random file A -> relay -> B with B offline during
// the upload. Upload MiB/s is the file's size over the time from its
// rename into A's folder to A's `unsafe` 0; download MiB/s is the size
// over the time from B's launch to the file at full size on B's disk.
// Each is set beside the same run's ceiling (the slower of a loopback TCP
// copy and a write+fsync of the same bytes).
func runB3Relay(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	// The staged file, A's copy, the relay's, B's and the baseline copy.
	size, err := rc.fit("B3-relay file", z.bigFile, 5, 256<<20)
	if err != nil {
		return err
	}
	rel := "big.bin"
	staged := filepath.Join(rc.dir, "stage", rel)
	if err := writeRandomFile(staged, size, uint64(rc.run)+300); err != nil {
		return err
	}
	v, err := startRelayVault(rc, true)
	if err != nil {
		return err
	}
	defer v.kill()
	r, a, b, ua0, ur0 := v.r, v.a, v.b, v.a0, v.r0
	dst := filepath.Join(a.folder, rel)
	stopSampler := sampleStored(rc, r, b3RelaySeries)
	if err := os.Rename(staged, dst); err != nil {
		stopSampler()
		return err
	}
	up, err := upload(rc.ctx, a, 1, z.syncTimeout)
	stopSampler()
	if err != nil {
		return err
	}
	mUp, err := rc.objScrape(r)
	if err != nil {
		return err
	}
	h, err := v.handOver(rc, func() (time.Time, error) {
		return waitSizes(rc.ctx, b.folder, []string{rel}, size, z.syncTimeout)
	})
	if err != nil {
		return err
	}
	mDown, err := rc.objScrape(r)
	if err != nil {
		return err
	}
	ua, ur1, ub, ur2, down := h.a, h.r1, h.b, h.r2, h.down
	if ok, err := sameFile(dst, filepath.Join(b.folder, rel)); err != nil || !ok {
		return fmt.Errorf("%s differs on B (%v)", rel, err)
	}
	ceiling, err := ceilings(rc, []string{dst}, filepath.Join(rc.dir, "baseline"))
	if err != nil {
		return err
	}
	upRate, downRate := mibps(size, up.safe), mibps(size, down)
	rc.add("upload", "MiB/s", upRate)
	rc.add("upload / ceiling", "x", upRate/ceiling)
	rc.add("download", "MiB/s", downRate)
	rc.add("download / ceiling", "x", downRate/ceiling)
	rc.add("upload wall", "s", up.safe.Seconds())
	rc.add("download wall", "s", down.Seconds())
	rc.add("CPU A", "s", ua.CPUSeconds-ua0.CPUSeconds)
	rc.add("CPU relay", "s", ur2.CPUSeconds-ur0.CPUSeconds)
	rc.add("CPU B", "s", ub.CPUSeconds)
	rc.add("peak RSS A", "MiB", float64(ua.PeakRSS)/(1<<20))
	rc.add("peak RSS relay", "MiB", float64(ur2.PeakRSS)/(1<<20))
	rc.add("peak RSS relay after upload", "MiB", float64(ur1.PeakRSS)/(1<<20))
	rc.add("peak RSS B", "MiB", float64(ub.PeakRSS)/(1<<20))
	rc.addObjReqs("upload", v.m0, mUp, float64(size)/(1<<30), "GiB")
	rc.addObjReqs("download", mUp, mDown, float64(size)/(1<<30), "GiB")
	rc.note("ceiling = the slower of the TCP copy and the write+fsync baselines, same bytes, same run")
	rc.note("upload clock: from the rename into A's folder to A's unsafe 0 (A hashes, encrypts and uploads in that time); download clock: from B's launch, A stopped")
	if err := b.stop(); err != nil {
		return err
	}
	return r.stop()
}

// b3RelaySeries is B3-relay's upload over time, charted by WriteSVG.
const b3RelaySeries = "B3-relay MiB stored by the relay"

// sampleStored records the relay's stored MiB every 250 ms as series
// until the returned function is called (which waits for the sampler).
func sampleStored(rc *runCtx, r *relayProc, series string) (stop func()) {
	ctx, cancel := context.WithCancel(rc.ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if m, err := r.scrape(ctx); err == nil {
					rc.sample(series, now.Sub(start).Seconds(), m[mStored]/(1<<20))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
