package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/weftsync/weft/node/api"
)

// runB1Relay: store and forward. A writes the B1 notes while B's agent is
// stopped; the upload clock runs from the last note written until A's
// status says `unsafe` 0 (the relay holds every entry and chunk). A is
// stopped; the download clock runs from B's launch until B's folder holds
// every note byte-identical, which B can only get from the relay.
func runB1Relay(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	v, err := startRelayVault(rc, true)
	if err != nil {
		return err
	}
	defer v.kill()
	r, a, b, ua0, ur0 := v.r, v.a, v.b, v.a0, v.r0
	ns := makeNotes(z.notes, 2<<10, 60, uint64(rc.run)+1) // B1's data
	if err := ns.write(a.folder); err != nil {
		return err
	}
	up, err := upload(rc.ctx, a, len(ns), z.syncTimeout)
	if err != nil {
		return err
	}
	sentA, _, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	mUp, err := rc.objScrape(r)
	if err != nil {
		return err
	}
	h, err := v.handOver(rc, func() (time.Time, error) { return waitNotes(b.folder, ns, z.syncTimeout) })
	if err != nil {
		return err
	}
	mDown, err := rc.objScrape(r)
	if err != nil {
		return err
	}
	ua, ur1, ub, ur2, down := h.a, h.r1, h.b, h.r2, h.down
	_, recvB, err := b.wire(rc.ctx)
	if err != nil {
		return err
	}
	nb := float64(ns.bytes())
	rc.add("upload (notes written -> A unsafe 0)", "s", up.safe.Seconds())
	rc.add("A indexed (notes written -> indexed)", "s", up.indexed.Seconds())
	rc.add("download (B launch -> every file)", "s", down.Seconds())
	rc.add("upload + download", "s", up.safe.Seconds()+down.Seconds())
	rc.add("CPU A", "s", ua.CPUSeconds-ua0.CPUSeconds)
	rc.add("CPU relay, upload", "s", ur1.CPUSeconds-ur0.CPUSeconds)
	rc.add("CPU relay, download", "s", ur2.CPUSeconds-ur1.CPUSeconds)
	rc.add("CPU B", "s", ub.CPUSeconds)
	rc.add("peak RSS A", "MiB", float64(ua.PeakRSS)/(1<<20))
	rc.add("peak RSS relay", "MiB", float64(ur2.PeakRSS)/(1<<20))
	rc.add("peak RSS B", "MiB", float64(ub.PeakRSS)/(1<<20))
	rc.add("bytes sent by A / note bytes", "x", float64(sentA)/nb)
	rc.add("bytes received by B / note bytes", "x", float64(recvB)/nb)
	rc.add("files", "count", float64(len(ns)))
	rc.addObjReqs("upload", v.m0, mUp, float64(len(ns)), "note")
	rc.addObjReqs("download", mUp, mDown, float64(len(ns)), "note")
	rc.note("B's agent is not running during the upload and A's is stopped (SIGTERM) before B starts: B gets everything from the relay")
	rc.note("upload clock: from the last note written into A's folder (A indexes, encrypts and uploads in that time)")
	if err := b.stop(); err != nil {
		return err
	}
	return r.stop()
}

// fsyncB1Relay repeats B1-relay with strace attached to the relay while
// A uploads and, separately, while B downloads.
func fsyncB1Relay(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	v, err := startRelayVault(rc, true)
	if err != nil {
		return err
	}
	defer v.kill()
	r, a, b := v.r, v.a, v.b
	ns := makeNotes(z.notes, 2<<10, 60, 99)
	upTrace := newStraceRun(filepath.Join(rc.dir, "strace-relay-upload.txt"))
	if err := upTrace.attachTo(r.pid); err != nil {
		return err
	}
	if err := ns.write(a.folder); err != nil {
		upTrace.stopAttached()
		return err
	}
	_, err = upload(rc.ctx, a, len(ns), z.syncTimeout)
	upTrace.stopAttached()
	if err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}
	downTrace := newStraceRun(filepath.Join(rc.dir, "strace-relay-download.txt"))
	if err := downTrace.attachTo(r.pid); err != nil {
		return err
	}
	if err := b.up(rc.ctx, false); err != nil {
		downTrace.stopAttached()
		return err
	}
	_, err = waitNotes(b.folder, ns, z.syncTimeout)
	if err == nil {
		_, err = b.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, indexed(len(ns)))
	}
	downTrace.stopAttached()
	if err != nil {
		return err
	}
	nUp, err := upTrace.count()
	if err != nil {
		return err
	}
	nDown, err := downTrace.count()
	if err != nil {
		return err
	}
	n := float64(len(ns))
	rc.add("fsyncs per note on the relay, upload", "calls", float64(nUp)/n)
	rc.add("fsyncs per note on the relay, download", "calls", float64(nDown)/n)
	if err := b.stop(); err != nil {
		return err
	}
	return r.stop()
}

// uploadTimes are measured from when the files were in A's folder.
type uploadTimes struct {
	indexed time.Duration // until A's status counted every file
	safe    time.Duration // until A's status said unsafe 0 as well
}

// upload polls A's status every 20 ms until every one of files is indexed
// and none is unsafe.
func upload(ctx context.Context, a *device, files int, limit time.Duration) (uploadTimes, error) {
	var ut uploadTimes
	start := time.Now()
	_, err := a.waitState(ctx, limit, 20*time.Millisecond, func(st api.Status) bool {
		if ut.indexed == 0 && indexed(files)(st) {
			ut.indexed = time.Since(start)
		}
		return safe(files)(st)
	})
	if err != nil {
		return ut, fmt.Errorf("upload to the relay: %w", err)
	}
	ut.safe = time.Since(start)
	if ut.indexed == 0 {
		ut.indexed = ut.safe
	}
	return ut, nil
}

// waitRelayUp waits until d's status shows its relay connected, so an
// upload's clock does not include dialling and enrolling.
func waitRelayUp(ctx context.Context, d *device) error {
	_, err := d.waitState(ctx, time.Minute, 20*time.Millisecond, func(st api.Status) bool {
		for _, p := range st.Peers {
			if p.Role == "relay" && p.Connection != "offline" {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("waiting for the relay connection: %w", err)
	}
	return nil
}
