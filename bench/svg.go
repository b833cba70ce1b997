package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Charts are hand-written SVG: a few polylines on axes, no dependency.

// svgLine is one named polyline.
type svgLine struct {
	name string
	pts  [][2]float64
}

var svgColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// lineChart renders lines on linear axes starting at zero.
func lineChart(title, xlabel, ylabel string, lines []svgLine) string {
	const w, h, l, r, t, bm = 720.0, 420.0, 70.0, 160.0, 40.0, 50.0
	xmax, ymax := 0.0, 0.0
	for _, ln := range lines {
		for _, p := range ln.pts {
			xmax, ymax = math.Max(xmax, p[0]), math.Max(ymax, p[1])
		}
	}
	xmax, ymax = niceCeil(xmax), niceCeil(ymax)
	px := func(x float64) float64 { return l + x/xmax*(w-l-r) }
	py := func(y float64) float64 { return h - bm - y/ymax*(h-t-bm) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15">%s</text>`+"\n", l, esc(title))
	for i := 0; i <= 5; i++ {
		xv, yv := xmax*float64(i)/5, ymax*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", l, py(yv), w-r, py(yv))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", l-6, py(yv)+4, fmtVal(yv))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(xv), h-bm+16, fmtVal(xv))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", l, h-bm, w-r, h-bm)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", l, t, l, h-bm)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (l+w-r)/2, h-12, esc(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (t+h-bm)/2, esc(ylabel))
	for i, ln := range lines {
		c := svgColors[i%len(svgColors)]
		var pts []string
		for _, p := range ln.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			w-r+10, t+float64(i)*18+6, c, w-r+26, t+float64(i)*18+10, esc(ln.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// cdf turns samples into a step curve: x latency, y percent at or below.
func cdf(ys []float64) [][2]float64 {
	s := slices.Clone(ys)
	slices.Sort(s)
	var pts [][2]float64
	for i, v := range s {
		pts = append(pts, [2]float64{v, float64(i) / float64(len(s)) * 100}, [2]float64{v, float64(i+1) / float64(len(s)) * 100})
	}
	return pts
}

// WriteSVG writes the charts the report has data for into dir and returns
// their paths: the B2 latency distribution (all runs pooled) and the B3
// and B5 throughput over time (one line per run).
func (rep *Report) WriteSVG(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	save := func(name, svg string) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(svg), 0o644); err != nil {
			return err
		}
		written = append(written, p)
		return nil
	}
	for _, r := range rep.Results {
		switch r.ID {
		case "B2":
			var lines []svgLine
			for _, s := range []string{"B2 end-to-end latency (ms)", "B2 wire latency (ms)"} {
				var ys []float64
				for _, p := range r.Series[s] {
					ys = append(ys, p.Y)
				}
				if len(ys) > 0 {
					lines = append(lines, svgLine{name: strings.TrimSuffix(strings.TrimPrefix(s, "B2 "), " (ms)"), pts: cdf(ys)})
				}
			}
			if len(lines) > 0 {
				title := fmt.Sprintf("B2: latency distribution, %s scale, %s", rep.Scale, r.Params)
				if err := save("b2-latency.svg", lineChart(title, "latency (ms)", "% of appends at or below", lines)); err != nil {
					return written, err
				}
			}
		case "B3-relay":
			byRun := map[int][][2]float64{}
			for _, p := range r.Series[b3RelaySeries] {
				byRun[p.Run] = append(byRun[p.Run], [2]float64{p.X, p.Y})
			}
			var lines []svgLine
			for run := range len(byRun) {
				lines = append(lines, svgLine{name: fmt.Sprintf("run %d", run+1), pts: byRun[run]})
			}
			if len(lines) > 0 {
				title := fmt.Sprintf("B3-relay upload: %s, %s scale", r.Params, rep.Scale)
				if err := save("b3-relay-stored.svg", lineChart(title, "seconds since the file appeared on A", "MiB stored by the relay", lines)); err != nil {
					return written, err
				}
			}
		case "B3", "B5":
			for s, ps := range r.Series {
				byRun := map[int][][2]float64{}
				for _, p := range ps {
					byRun[p.Run] = append(byRun[p.Run], [2]float64{p.X, p.Y})
				}
				var lines []svgLine
				for run := range len(byRun) {
					lines = append(lines, svgLine{name: fmt.Sprintf("run %d", run+1), pts: byRun[run]})
				}
				title := fmt.Sprintf("%s: %s, %s scale", r.ID, r.Params, rep.Scale)
				_ = s
				if err := save(strings.ToLower(r.ID)+"-throughput.svg", lineChart(title, "seconds since the files appeared on A", "MiB/s received by B", lines)); err != nil {
					return written, err
				}
			}
		}
	}
	return written, nil
}
