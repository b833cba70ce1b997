package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/weftsync/weft/internal/svgchart"
)

// Charts are internal/svgchart's.

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
			var lines []svgchart.Line
			for _, s := range []string{"B2 end-to-end latency (ms)", "B2 wire latency (ms)"} {
				var ys []float64
				for _, p := range r.Series[s] {
					ys = append(ys, p.Y)
				}
				if len(ys) > 0 {
					lines = append(lines, svgchart.Line{Name: strings.TrimSuffix(strings.TrimPrefix(s, "B2 "), " (ms)"), Points: svgchart.CDF(ys)})
				}
			}
			if len(lines) > 0 {
				title := fmt.Sprintf("B2: latency distribution, %s scale, %s", rep.Scale, r.Params)
				if err := save("b2-latency.svg", svgchart.Lines(title, "latency (ms)", "% of appends at or below", lines)); err != nil {
					return written, err
				}
			}
		case "B3-relay":
			byRun := map[int][][2]float64{}
			for _, p := range r.Series[b3RelaySeries] {
				byRun[p.Run] = append(byRun[p.Run], [2]float64{p.X, p.Y})
			}
			var lines []svgchart.Line
			for run := range len(byRun) {
				lines = append(lines, svgchart.Line{Name: fmt.Sprintf("run %d", run+1), Points: byRun[run]})
			}
			if len(lines) > 0 {
				title := fmt.Sprintf("B3-relay upload: %s, %s scale", r.Params, rep.Scale)
				if err := save("b3-relay-stored.svg", svgchart.Lines(title, "seconds since the file appeared on A", "MiB stored by the relay", lines)); err != nil {
					return written, err
				}
			}
		case "B3", "B5":
			for s, ps := range r.Series {
				byRun := map[int][][2]float64{}
				for _, p := range ps {
					byRun[p.Run] = append(byRun[p.Run], [2]float64{p.X, p.Y})
				}
				var lines []svgchart.Line
				for run := range len(byRun) {
					lines = append(lines, svgchart.Line{Name: fmt.Sprintf("run %d", run+1), Points: byRun[run]})
				}
				title := fmt.Sprintf("%s: %s, %s scale", r.ID, r.Params, rep.Scale)
				_ = s
				if err := save(strings.ToLower(r.ID)+"-throughput.svg", svgchart.Lines(title, "seconds since the files appeared on A", "MiB/s received by B", lines)); err != nil {
					return written, err
				}
			}
		}
	}
	return written, nil
}
