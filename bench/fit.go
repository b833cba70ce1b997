package bench

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// DefaultKeepFree is the disk space a run leaves free unless
// Config.KeepFree says otherwise: the machines this runs on are shared.
const DefaultKeepFree = 15 << 30

// mkdirAll creates dir for diskFree, with the permissions the runs use.
func mkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

// fit returns how many bytes of data a scenario may use in this run: want,
// or less when copies x want plus Config.KeepFree does not fit the free
// disk, or when want exceeds Config.MaxData (a cap for time). A reduced
// size is a whole number of steps, and the reduction is recorded so that
// the table and the JSON say it (Result.Reduced): a full-scale number from
// a smaller run must never pass for the full one. It fails when not even
// one step (or want, when smaller) fits.
func (rc *runCtx) fit(what string, want, copies, step int64) (int64, error) {
	free, err := diskFree(rc.dir)
	if err != nil {
		return 0, err
	}
	keep := rc.cfg.KeepFree
	switch {
	case keep == 0:
		keep = DefaultKeepFree
	case keep < 0:
		keep = 0
	}
	got, why := want, ""
	if byDisk := (free - keep) / copies / step * step; byDisk < got {
		got = byDisk
		why = fmt.Sprintf("%s: %s does not fit the disk (%s free, %d copies, %s kept free)", what, human(want), human(free), copies, human(keep))
	}
	if m := rc.cfg.MaxData; m > 0 && m < got {
		got = m / step * step
		why = fmt.Sprintf("%s: capped by --max-gib at %s (of %s) for time", what, human(m), human(want))
	}
	if got < min(step, want) { // data smaller than a step runs whole
		return 0, fmt.Errorf("%s: not even %s fits (%s free, %d copies, %s kept free)", what, human(step), human(free), copies, human(keep))
	}
	if got < want {
		rc.reduced = append(rc.reduced, fmt.Sprintf("%s; ran %s, %.1f %% of the scale", why, human(got), 100*float64(got)/float64(want)))
	}
	return got, nil
}

// human prints a byte count in GiB or MiB.
func human(n int64) string {
	if n >= 1<<30 {
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	}
	return strconv.FormatInt(n>>20, 10) + " MiB"
}

// loadAvg returns the 1-minute load average from /proc/loadavg (NaN when
// unreadable): the machines are shared, so each run records what else was
// running beside it.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return math.NaN()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
