package bench

import (
	"fmt"
	"path/filepath"
	"time"
)

// runB1: N notes on A, indexed; then B starts and the clock runs until B
// holds every note byte-identical.
func runB1(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	a, b, ns, err := pairWithNotes(rc, z.notes, uint64(rc.run)+1)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	ua0, err := a.usage()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	ready := time.Now()
	seen, err := waitNotes(b.folder, ns, z.syncTimeout)
	if err != nil {
		return fmt.Errorf("device B: %w\n%s", err, b.logTail())
	}
	ua, err := a.usage()
	if err != nil {
		return err
	}
	ub, err := b.usage()
	if err != nil {
		return err
	}
	_, recv, err := b.wire(rc.ctx)
	if err != nil {
		return err
	}
	sent, _, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	wall := seen.Sub(start)
	rc.add("wall from B start", "s", wall.Seconds())
	rc.add("wall from B ready", "s", seen.Sub(ready).Seconds())
	rc.add("CPU A", "s", ua.CPUSeconds-ua0.CPUSeconds)
	rc.add("CPU B", "s", ub.CPUSeconds)
	rc.add("peak RSS A", "MiB", float64(ua.PeakRSS)/(1<<20))
	rc.add("peak RSS B", "MiB", float64(ub.PeakRSS)/(1<<20))
	rc.add("bytes received by B / note bytes", "x", float64(recv)/float64(ns.bytes()))
	rc.add("bytes sent by A", "MiB", float64(sent)/(1<<20))
	rc.add("files", "count", float64(len(ns)))
	rc.note("A indexed the notes before B started; the clock starts when B's agent is launched")
	if z.idle > 0 {
		// The footprint left behind (issue 16: idle RSS <= 48 MiB and
		// idle CPU <= 0.03 s a minute on a device after B1).
		ia, ib, err := idleUsage(rc, z.idle, a, b)
		if err != nil {
			return err
		}
		rc.add("idle RSS A after", "MiB", float64(ia.rss)/(1<<20))
		rc.add("idle RSS B after", "MiB", float64(ib.rss)/(1<<20))
		rc.add("idle CPU A", "s/min", ia.cpuPerMin)
		rc.add("idle CPU B", "s/min", ib.cpuPerMin)
		rc.note("idle: both agents left alone for %s after B had every note; RSS at its end, CPU over it", z.idle)
	}

	// Baseline: the same notes written and fsynced one by one.
	var files []string
	for rel := range ns {
		files = append(files, filepath.Join(a.folder, filepath.FromSlash(rel)))
	}
	dd, _, err := diskCopy(files, filepath.Join(rc.dir, "baseline"))
	if err != nil {
		return err
	}
	rc.add("baseline write+fsync of the notes", "s", dd.Seconds())
	rc.add("wall / baseline", "x", wall.Seconds()/dd.Seconds())
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}

// fsyncB1 repeats B1 with A attached by strace while it indexes the notes
// and while it sends them, and B launched under strace.
func fsyncB1(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	a, b, err := pair(rc)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	ns := makeNotes(z.notes, 2<<10, 60, 99)
	ingest := newStraceRun(filepath.Join(rc.dir, "strace-a-ingest.txt"))
	if err := ingest.attachTo(a.pid); err != nil {
		return err
	}
	if err := ns.write(a.folder); err != nil {
		ingest.stopAttached()
		return err
	}
	_, err = a.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, indexed(len(ns)))
	ingest.stopAttached()
	if err != nil {
		return err
	}
	send := newStraceRun(filepath.Join(rc.dir, "strace-a-send.txt"))
	if err := send.attachTo(a.pid); err != nil {
		return err
	}
	if err := b.up(rc.ctx, true); err != nil {
		send.stopAttached()
		return err
	}
	_, err = waitNotes(b.folder, ns, z.syncTimeout)
	if err == nil {
		// Let B finish committing what it applied.
		_, err = b.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, inSync(len(ns)))
	}
	send.stopAttached()
	if err != nil {
		return err
	}
	if err := b.stop(); err != nil {
		return err
	}
	nIngest, err := ingest.count()
	if err != nil {
		return err
	}
	nSend, err := send.count()
	if err != nil {
		return err
	}
	nB, err := b.strace.count()
	if err != nil {
		return err
	}
	n := float64(len(ns))
	rc.add("fsyncs per note, A indexing", "calls", float64(nIngest)/n)
	rc.add("fsyncs per note, A sending", "calls", float64(nSend)/n)
	rc.add("fsyncs per note, B receiving", "calls", float64(nB)/n)
	return a.stop()
}

// pairWithNotes pairs two devices, writes n notes of 2 KiB in 60 folders
// into A's folder and waits until A has indexed them. On error nothing is
// left running.
func pairWithNotes(rc *runCtx, n int, seed uint64) (a, b *device, ns notes, err error) {
	z := sizesFor(rc.cfg.Scale)
	a, b, err = pair(rc)
	if err != nil {
		return nil, nil, nil, err
	}
	ns = makeNotes(n, 2<<10, 60, seed)
	if err = ns.write(a.folder); err == nil {
		_, err = a.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, indexed(len(ns)))
	}
	if err != nil {
		a.kill()
		b.kill()
		return nil, nil, nil, err
	}
	return a, b, ns, nil
}

// idleFootprint is what an agent used while left alone.
type idleFootprint struct {
	rss       int64   // bytes resident at the end of the window
	cpuPerMin float64 // CPU seconds per minute over the window
}

// idleUsage leaves the devices alone for d and reports each one's
// footprint over that window.
func idleUsage(rc *runCtx, d time.Duration, devs ...*device) (idleFootprint, idleFootprint, error) {
	before := make([]procUsage, len(devs))
	for i, dev := range devs {
		u, err := dev.usage()
		if err != nil {
			return idleFootprint{}, idleFootprint{}, err
		}
		before[i] = u
	}
	select {
	case <-rc.ctx.Done():
		return idleFootprint{}, idleFootprint{}, rc.ctx.Err()
	case <-time.After(d):
	}
	out := make([]idleFootprint, len(devs))
	for i, dev := range devs {
		u, err := dev.usage()
		if err != nil {
			return idleFootprint{}, idleFootprint{}, err
		}
		out[i] = idleFootprint{rss: u.RSS, cpuPerMin: (u.CPUSeconds - before[i].CPUSeconds) / d.Minutes()}
	}
	return out[0], out[1], nil
}
