package bench

import (
	"fmt"
	"path/filepath"
	"time"
)

// runB9: a folder of n small files, fully indexed; then a rescan with
// nothing changed, timed by the agent (the millis of `weft scan --json`)
// and by the harness around the API call.
func runB9(rc *runCtx) error {
	for _, n := range sizesFor(rc.cfg.Scale).rescanSets {
		if err := rescan(rc, n); err != nil {
			return err
		}
	}
	return nil
}

func rescan(rc *runCtx, n int) error {
	z := sizesFor(rc.cfg.Scale)
	dir := filepath.Join(rc.dir, fmt.Sprint(n))
	a := newDevice(rc, dir, "a")
	if _, err := a.run(rc.ctx, "init", a.folder); err != nil {
		return err
	}
	if err := makeNotes(n, 1<<10, 100, uint64(n)).write(a.folder); err != nil {
		return err
	}
	if err := a.up(rc.ctx, false); err != nil {
		return err
	}
	defer a.kill()
	if _, err := a.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, indexed(n)); err != nil {
		return err
	}
	start := time.Now()
	res, err := a.scan(rc.ctx)
	wall := time.Since(start)
	if err != nil {
		return err
	}
	if len(res) != 1 || res[0].Changes != 0 || res[0].Files < n {
		return fmt.Errorf("rescan of %d unchanged files: got %+v, want no changes", n, res)
	}
	rc.add(fmt.Sprintf("%d files: scan millis (agent)", n), "ms", float64(res[0].Millis))
	rc.add(fmt.Sprintf("%d files: API call wall", n), "ms", ms(wall))
	u, err := a.usage()
	if err != nil {
		return err
	}
	rc.add(fmt.Sprintf("%d files: peak RSS", n), "MiB", float64(u.PeakRSS)/(1<<20))
	return a.stop()
}
