package simulation

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// lineChart draws pts (y in [0,1]) as a step line in a small SVG.
func lineChart(title, xlabel, ylabel string, pts []Point) string {
	const W, H, L, R, T, B = 640.0, 400.0, 70.0, 20.0, 40.0, 50.0
	xmax := 1.0
	for _, p := range pts {
		xmax = max(xmax, p.T)
	}
	x := func(v float64) float64 { return L + v/xmax*(W-L-R) }
	y := func(v float64) float64 { return H - B - v*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="14">%s</text>`+"\n", L, esc(title))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", L, y(0), W-R, y(0), L, y(0), L, y(1))
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.2f</text><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", L-6, y(f)+4, f, L, y(f), W-R, y(f))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.4g</text>`+"\n", x(f*xmax), y(0)+18, f*xmax)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (L+W-R)/2, H-10, esc(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (T+H-B)/2, esc(ylabel))
	if len(pts) > 0 {
		b.WriteString(`<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="`)
		prev := 0.0
		for _, p := range pts {
			fmt.Fprintf(&b, "%.1f,%.1f %.1f,%.1f ", x(p.T), y(prev), x(p.T), y(p.Share))
			prev = p.Share
		}
		b.WriteString("\"/>\n")
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
