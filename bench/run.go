package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Scale selects the sizes a scenario runs at.
type Scale string

// The scales of BENCHMARKS.md, and the tiny one the tests use.
const (
	Smoke Scale = "smoke" // fits in CI on 2 cores, under a minute each
	Full  Scale = "full"  // the sizes of BENCHMARKS.md, or the largest that fits
	Tiny  Scale = "tiny"  // B1, B2 and B1-relay only, for `go test`
)

// Config is one invocation of the harness.
type Config struct {
	Bin   string   // the weft binary to run
	Scale Scale    // default Smoke
	Only  []string // scenario IDs ("B1", "B3"); none: every scenario
	Runs  int      // repetitions of each scenario; default 3
	Dir   string   // scratch directory; default a new one under os.TempDir
	Out   io.Writer
	// InstallStrace lets the harness apt-get install strace when it is
	// missing and it runs as root.
	InstallStrace bool
	// Fsyncs runs the strace pass (default on in `weft bench`).
	Fsyncs bool
	// KeepFree is the disk space every run leaves free (0:
	// DefaultKeepFree; negative: none); MaxData, when set, caps the bytes of data of the
	// large scenarios (B3, B3-relay, B4, B5, B6, B8) for time. Either one
	// shrinks a scenario below its scale, which Result.Reduced says.
	KeepFree, MaxData int64
	// ProfileDir, when set, makes every agent and relay write a CPU
	// profile there (their hidden --cpuprofile flag), one file per process
	// launch: SCENARIO-runN-PROC-K.pprof.
	ProfileDir string
	// RelayChunks "s3" keeps every relay's chunks in S3-compatible object
	// storage: a versitygw (the binary VersityGW, else $WEFT_VERSITYGW,
	// else on PATH) that Run starts on 127.0.0.1 with its data under the
	// scratch directory and kills at the end, one prefix per run. The
	// relay scenarios then also record the relay's object requests. ""
	// or "pack": pack files in the relay's home.
	RelayChunks, VersityGW string
	s3                     *objStore // started by Run for RelayChunks "s3"
}

// Metric is one measured quantity over the runs of a scenario.
type Metric struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"` // one per run, in run order
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

// Point is one sample of a series (a latency, or throughput over time).
type Point struct {
	Run int     `json:"run"`
	X   float64 `json:"x"`
	Y   float64 `json:"y"`
}

// Result is one scenario's outcome.
type Result struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Params  string   `json:"params,omitempty"`
	Target  string   `json:"target"`
	Skipped string   `json:"skipped,omitempty"`
	Error   string   `json:"error,omitempty"`
	Metrics []Metric `json:"metrics"`
	Notes   []string `json:"notes,omitempty"`
	// Reduced says why and by how much a run used less data than its
	// scale (fit): the numbers are then not the scale's.
	Reduced []string           `json:"reduced,omitempty"`
	Series  map[string][]Point `json:"series,omitempty"`
}

// Report is one invocation's results.
type Report struct {
	Date   time.Time `json:"date"`
	Scale  Scale     `json:"scale"`
	Runs   int       `json:"runs"`
	Bin    string    `json:"bin"`
	Cores  int       `json:"cores"`
	MemMiB int64     `json:"mem_mib"`
	// RelayChunks is where the relays kept their chunks: "pack" or "s3".
	RelayChunks string   `json:"relay_chunks"`
	Results     []Result `json:"results"`
}

// runCtx is what a scenario sees during one run.
type runCtx struct {
	ctx     context.Context
	cfg     *Config
	id      string // the scenario's ID
	run     int
	dir     string // this run's scratch directory
	logf    func(format string, args ...any)
	names   []string
	values  map[string]float64
	units   map[string]string
	notes   []string
	reduced []string
	series  map[string][]Point
	// launches counts the processes started with a CPU profile, so a
	// restarted agent does not overwrite its first profile.
	launches int
}

func (rc *runCtx) add(name, unit string, v float64) {
	if _, ok := rc.values[name]; !ok {
		rc.names = append(rc.names, name)
	}
	rc.values[name] = v
	rc.units[name] = unit
}

func (rc *runCtx) note(format string, args ...any) {
	rc.notes = append(rc.notes, fmt.Sprintf(format, args...))
}

func (rc *runCtx) sample(series string, x, y float64) {
	rc.series[series] = append(rc.series[series], Point{Run: rc.run, X: x, Y: y})
}

// scenario is one B-scenario.
type scenario struct {
	id, title, target string
	relay             bool // runs a `weft relay` process
	tiny              bool // runs at the Tiny scale (`go test`)
	params            func(Scale) string
	run               func(rc *runCtx) error
	// fsyncPass, if set, runs once after the timed runs with agents under
	// strace; it records counts only.
	fsyncPass func(rc *runCtx) error
}

// Run runs the selected scenarios and returns the report. It prints a
// table to cfg.Out as results arrive.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if errUnsupported != nil {
		return nil, errUnsupported
	}
	if cfg.Bin == "" {
		return nil, fmt.Errorf("bench: no weft binary given")
	}
	if cfg.Scale == "" {
		cfg.Scale = Smoke
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 3
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	root := cfg.Dir
	if root == "" {
		d, err := os.MkdirTemp("", "weft-bench-")
		if err != nil {
			return nil, err
		}
		root = d
		defer os.RemoveAll(d)
	}
	only := map[string]bool{}
	for _, id := range cfg.Only {
		only[strings.ToUpper(strings.TrimSpace(id))] = true
	}
	switch cfg.RelayChunks {
	case "", "pack":
		cfg.RelayChunks = "pack"
	case "s3":
		s, err := startObjStore(cfg.VersityGW, filepath.Join(root, "s3"))
		if err != nil {
			return nil, err
		}
		defer s.stop()
		cfg.s3 = s
	default:
		return nil, fmt.Errorf("bench: relay chunks %q: want pack or s3", cfg.RelayChunks)
	}
	rep := &Report{Date: time.Now().UTC(), Scale: cfg.Scale, Runs: cfg.Runs, Bin: cfg.Bin, Cores: numCPU(), MemMiB: memTotalMiB(), RelayChunks: cfg.RelayChunks}
	fmt.Fprintf(cfg.Out, "weft bench: scale %s, %d runs, %d cores, %d MiB memory, binary %s, relay chunks in %s\n", cfg.Scale, cfg.Runs, rep.Cores, rep.MemMiB, cfg.Bin, cfg.RelayChunks)
	fsyncs, why := false, ""
	if cfg.Fsyncs {
		fsyncs, why = straceWorks(cfg.InstallStrace)
		if !fsyncs {
			fmt.Fprintf(cfg.Out, "fsync counts skipped: %s\n", why)
		}
	}
	for _, sc := range scenarios() {
		if len(only) > 0 && !only[strings.ToUpper(sc.id)] {
			continue
		}
		if cfg.Scale == Tiny && !sc.tiny {
			continue
		}
		res := Result{ID: sc.id, Title: sc.title, Target: sc.target, Series: map[string][]Point{}}
		if sc.params != nil {
			res.Params = sc.params(cfg.Scale)
		}
		fmt.Fprintf(cfg.Out, "\n== %s %s (%s)\n", sc.id, sc.title, res.Params)
		per := []*runCtx{}
		for i := range cfg.Runs {
			rc := newRunCtx(ctx, &cfg, sc.id, i, filepath.Join(root, fmt.Sprintf("%s-run%d", sc.id, i)))
			rc.add("load average (1 min) at start", "load", loadAvg())
			err := sc.run(rc)
			rc.add("load average (1 min) at end", "load", loadAvg())
			if err != nil {
				// Kept for a look at the agents' logs and homes: the
				// scratch root goes with it unless --dir named one.
				res.Error = fmt.Sprintf("run %d: %v (its directory: %s)", i+1, err, rc.dir)
				break
			}
			os.RemoveAll(rc.dir)
			per = append(per, rc)
			fmt.Fprintf(cfg.Out, "   run %d: %s\n", i+1, oneLine(rc))
		}
		if sc.fsyncPass != nil && res.Error == "" {
			if fsyncs {
				rc := newRunCtx(ctx, &cfg, sc.id, -1, filepath.Join(root, sc.id+"-fsync"))
				err := sc.fsyncPass(rc)
				os.RemoveAll(rc.dir)
				if err != nil {
					res.Error = fmt.Sprintf("fsync pass: %v", err)
				} else {
					for _, r := range per {
						for _, n := range rc.names {
							r.add(n, rc.units[n], rc.values[n])
						}
					}
					res.Notes = append(res.Notes, "fsync counts come from one separate pass under strace -f -c; its times are not reported")
				}
			} else {
				res.Notes = append(res.Notes, "fsync counts skipped: "+why)
			}
		}
		aggregate(&res, per)
		rep.Results = append(rep.Results, res)
		printResult(cfg.Out, res)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	return rep, nil
}

func newRunCtx(ctx context.Context, cfg *Config, id string, run int, dir string) *runCtx {
	return &runCtx{
		ctx: ctx, cfg: cfg, id: id, run: run, dir: dir,
		logf:   func(f string, a ...any) { fmt.Fprintf(cfg.Out, "   "+f+"\n", a...) },
		values: map[string]float64{}, units: map[string]string{}, series: map[string][]Point{},
	}
}

func oneLine(rc *runCtx) string {
	var parts []string
	for _, n := range rc.names {
		parts = append(parts, fmt.Sprintf("%s=%s", n, fmtVal(rc.values[n])))
	}
	return strings.Join(parts, " ")
}

// aggregate turns the runs' values into medians with min and max.
func aggregate(res *Result, per []*runCtx) {
	var names []string
	units := map[string]string{}
	for _, rc := range per {
		for _, n := range rc.names {
			if !slices.Contains(names, n) {
				names = append(names, n)
				units[n] = rc.units[n]
			}
		}
		for s, ps := range rc.series {
			res.Series[s] = append(res.Series[s], ps...)
		}
		for _, n := range rc.notes {
			if !slices.Contains(res.Notes, n) {
				res.Notes = append(res.Notes, n)
			}
		}
		for _, n := range rc.reduced {
			if !slices.Contains(res.Reduced, n) {
				res.Reduced = append(res.Reduced, n)
			}
		}
	}
	for _, n := range names {
		m := Metric{Name: n, Unit: units[n]}
		for _, rc := range per {
			if v, ok := rc.values[n]; ok {
				m.Values = append(m.Values, v)
			}
		}
		m.Median = median(m.Values)
		m.Min, m.Max = slices.Min(m.Values), slices.Max(m.Values)
		res.Metrics = append(res.Metrics, m)
	}
}

// Metric returns the named metric of the result, if any.
func (r Result) Metric(name string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

func fmtVal(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
