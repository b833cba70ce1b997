package simulation

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/weftsync/weft/internal/svgchart"
)

// WriteTable prints res as a two-column table.
func WriteTable(w io.Writer, res *Result) {
	row := func(k string, v any) { fmt.Fprintf(w, "  %-34s %v\n", k, v) }
	fmt.Fprintf(w, "%s  seed %d  devices %d  steps %d\n", res.Scenario, res.Seed, res.Devices, res.Steps)
	row("converged", res.Converged)
	row("time to converge (s)", fmt.Sprintf("%.2f", res.ConvergeSeconds))
	row("write-to-observe p50/p95/p99 (ms)", fmt.Sprintf("%.0f / %.0f / %.0f (max %.0f, n=%d)", res.P50Ms, res.P95Ms, res.P99Ms, res.MaxMs, len(res.LatenciesMs)))
	row("writes acked / superseded / lost", fmt.Sprintf("%d / %d / %d", res.Acked, res.Superseded, len(res.Lost)))
	row("observations missing", fmt.Sprintf("%d of %d", res.ObservationsMissing, res.ObservationsExpected))
	row("conflict copies in final tree", res.ConflictFiles)
	row("applier temp files left", res.TempFiles)
	row("bad content", res.BadContent)
	row("bytes sent per byte changed", fmt.Sprintf("%.3f (%d sent, %d changed x %d others)", res.BytesPerByte, res.BytesSent, res.BytesChanged, max(res.Devices-1, 0)))
	row("messages per node", fmt.Sprintf("%.1f", res.MsgsPerNode))
	row("heap per node (MiB)", fmt.Sprintf("%.2f", res.MemPerNode/(1<<20)))
	if res.PossiblePairs > 0 {
		row("pairs connected directly", fmt.Sprintf("%d of %d", res.DirectPairs, res.PossiblePairs))
	}
	row("setup / wall (s)", fmt.Sprintf("%.1f / %.1f", res.SetupSeconds, res.WallSeconds))
	if len(res.Failures) == 0 {
		fmt.Fprintln(w, "PASS")
		return
	}
	fmt.Fprintf(w, "FAIL (%d)\n", len(res.Failures))
	for _, f := range res.Failures {
		fmt.Fprintln(w, "  "+f)
	}
}

// WriteJSON writes res to path.
func WriteJSON(path string, res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteSVGs writes latency-cdf.svg and convergence.svg into dir.
func WriteSVGs(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var cdf []Point
	for i, l := range res.LatenciesMs {
		cdf = append(cdf, Point{T: l, Share: float64(i+1) / float64(len(res.LatenciesMs))})
	}
	title := fmt.Sprintf("%s seed %d, %d devices", res.Scenario, res.Seed, res.Devices)
	if err := os.WriteFile(filepath.Join(dir, "latency-cdf.svg"), []byte(lineChart(title+": write-to-observe latency CDF", "latency (ms)", "share of observations", cdf)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "convergence.svg"), []byte(lineChart(title+": convergence", "time (s)", "share of expected observations made", res.Convergence)), 0o644)
}

// lineChart draws pts (y in [0,1]) as a step line (internal/svgchart).
func lineChart(title, xlabel, ylabel string, pts []Point) string {
	xy := make([][2]float64, len(pts))
	for i, p := range pts {
		xy[i] = [2]float64{p.T, p.Share}
	}
	return svgchart.Lines(title, xlabel, ylabel, []svgchart.Line{{Name: ylabel, Points: svgchart.Steps(xy)}})
}
