package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// connected starts B and waits until both agents report their (empty or
// not) folder in sync with the other connected.
func connected(rc *runCtx, a, b *device, files int) error {
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	for _, d := range []*device{a, b} {
		if _, err := d.waitState(rc.ctx, 2*time.Minute, 20*time.Millisecond, inSync(files)); err != nil {
			return err
		}
	}
	return nil
}

// transfer moves staged files into A's folder by rename (so the write time
// is not counted) and waits until B holds them all at their full size. It
// records MiB/s, CPU and peak RSS of both agents, bytes on the wire, and
// B's receive rate over time as series.
func transfer(rc *runCtx, a, b *device, rels []string, size int64, series string, limit time.Duration) (time.Duration, error) {
	stage := filepath.Join(rc.dir, "stage")
	ua0, err := a.usage()
	if err != nil {
		return 0, err
	}
	ub0, err := b.usage()
	if err != nil {
		return 0, err
	}
	_, recv0, err := b.wire(rc.ctx)
	if err != nil {
		return 0, err
	}
	sctx, stopSampler := context.WithCancel(rc.ctx)
	sampled := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sampled)
		last, lastT := recv0, start
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case now := <-tick.C:
				_, recv, err := b.wire(sctx)
				if err != nil {
					continue
				}
				rc.sample(series, now.Sub(start).Seconds(), mibps(recv-last, now.Sub(lastT)))
				last, lastT = recv, now
			}
		}
	}()
	for _, rel := range rels {
		dst := filepath.Join(a.folder, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			stopSampler()
			return 0, err
		}
		if err := os.Rename(filepath.Join(stage, rel), dst); err != nil {
			stopSampler()
			return 0, err
		}
	}
	done, err := waitSizes(rc.ctx, b.folder, rels, size, limit)
	stopSampler()
	<-sampled
	if err != nil {
		return 0, fmt.Errorf("%w\n%s", err, b.logTail())
	}
	wall := done.Sub(start)
	ua, err := a.usage()
	if err != nil {
		return 0, err
	}
	ub, err := b.usage()
	if err != nil {
		return 0, err
	}
	_, recv, err := b.wire(rc.ctx)
	if err != nil {
		return 0, err
	}
	total := size * int64(len(rels))
	rc.add("throughput", "MiB/s", mibps(total, wall))
	rc.add("wall", "s", wall.Seconds())
	rc.add("CPU A", "s", ua.CPUSeconds-ua0.CPUSeconds)
	rc.add("CPU B", "s", ub.CPUSeconds-ub0.CPUSeconds)
	rc.add("peak RSS A", "MiB", float64(ua.PeakRSS)/(1<<20))
	rc.add("peak RSS B", "MiB", float64(ub.PeakRSS)/(1<<20))
	rc.add("bytes received by B / payload", "x", float64(recv-recv0)/float64(total))
	// Byte-identical, checked after the clock stopped.
	for _, rel := range rels {
		ok, err := sameFile(filepath.Join(a.folder, rel), filepath.Join(b.folder, rel))
		if err != nil || !ok {
			return 0, fmt.Errorf("%s differs on B (%v)", rel, err)
		}
	}
	return wall, nil
}

// waitSizes polls until every rel under root exists at size bytes.
func waitSizes(ctx context.Context, root string, rels []string, size int64, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	next := 0
	for time.Now().Before(deadline) {
		for next < len(rels) {
			fi, err := os.Stat(filepath.Join(root, rels[next]))
			if err != nil || fi.Size() != size {
				break
			}
			next++
		}
		if next == len(rels) {
			return time.Now(), nil
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%d of %d files arrived within %s", next, len(rels), limit)
}

// runB3: one large random file, A -> B.
func runB3(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	// The staged file (A's after the rename), B's copy, the baseline's,
	// with room to spare.
	size, err := rc.fit("B3 file", z.bigFile, 5, 256<<20)
	if err != nil {
		return err
	}
	return bulk(rc, []string{"big.bin"}, size, "B3 throughput over time (MiB/s received by B)", z.syncTimeout)
}

// runB5: many large files written at once.
func runB5(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	total, err := rc.fit("B5 files", int64(z.manyFiles)*z.manySize, 5, z.manySize)
	if err != nil {
		return err
	}
	var rels []string
	for i := range total / z.manySize {
		rels = append(rels, fmt.Sprintf("d%02d/f%03d.bin", i%10, i))
	}
	return bulk(rc, rels, z.manySize, "B5 throughput over time (MiB/s received by B)", z.syncTimeout)
}

func bulk(rc *runCtx, rels []string, size int64, series string, limit time.Duration) error {
	a, b, err := pair(rc)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	if err := connected(rc, a, b, 0); err != nil {
		return err
	}
	for i, rel := range rels {
		if err := writeRandomFile(filepath.Join(rc.dir, "stage", rel), size, uint64(rc.run*1000+i)); err != nil {
			return err
		}
	}
	wall, err := transfer(rc, a, b, rels, size, series, limit)
	if err != nil {
		return err
	}
	st, err := b.status(rc.ctx)
	if err != nil {
		return err
	}
	fails := 0
	for _, f := range st.Folders {
		fails += len(f.Errors)
	}
	rc.add("failures (errors on B)", "count", float64(fails))
	var files []string
	for _, rel := range rels {
		files = append(files, filepath.Join(a.folder, rel))
	}
	ceiling, err := ceilings(rc, files, filepath.Join(rc.dir, "baseline"))
	if err != nil {
		return err
	}
	rc.add("throughput / ceiling", "x", mibps(size*int64(len(rels)), wall)/ceiling)
	rc.note("ceiling = the slower of the TCP copy and the write+fsync baselines, same bytes, same run")
	rc.note("the clock starts when the files are renamed into A's folder (A hashes, encrypts and sends them in that time)")
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}
