package svgchart

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Line is one named polyline: its points as (x, y).
type Line struct {
	Name   string
	Points [][2]float64
}

var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// Lines renders lines on linear axes starting at zero, each axis up to a
// round number past its largest value, with a legend of the lines' names.
func Lines(title, xlabel, ylabel string, lines []Line) string {
	const w, h, l, r, t, bm = 720.0, 420.0, 70.0, 160.0, 40.0, 50.0
	xmax, ymax := 0.0, 0.0
	for _, ln := range lines {
		for _, p := range ln.Points {
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
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", l-6, py(yv)+4, tick(yv))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(xv), h-bm+16, tick(xv))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", l, h-bm, w-r, h-bm)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", l, t, l, h-bm)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (l+w-r)/2, h-12, esc(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (t+h-bm)/2, esc(ylabel))
	for i, ln := range lines {
		c := colors[i%len(colors)]
		var pts []string
		for _, p := range ln.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			w-r+10, t+float64(i)*18+6, c, w-r+26, t+float64(i)*18+10, esc(ln.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// CDF turns samples into a step curve: x a sample's value, y the percent
// of samples at or below it.
func CDF(ys []float64) [][2]float64 {
	s := slices.Clone(ys)
	slices.Sort(s)
	var pts [][2]float64
	for i, v := range s {
		pts = append(pts, [2]float64{v, float64(i) / float64(len(s)) * 100}, [2]float64{v, float64(i+1) / float64(len(s)) * 100})
	}
	return pts
}

// Steps turns points into a step curve: each y holds until the next x.
func Steps(pts [][2]float64) [][2]float64 {
	var out [][2]float64
	prev := 0.0
	for _, p := range pts {
		out = append(out, [2]float64{p[0], prev}, p)
		prev = p[1]
	}
	return out
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

// tick formats an axis value: whole numbers plainly, others with the
// digits their size needs.
func tick(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e12, math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
