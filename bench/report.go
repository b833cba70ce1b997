package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
)

// printResult prints one scenario's table: median, min and max per metric.
func printResult(w io.Writer, r Result) {
	if r.Skipped != "" {
		fmt.Fprintf(w, "\n== %s %s: skipped: %s\n", r.ID, r.Title, r.Skipped)
		return
	}
	fmt.Fprintf(w, "-- %s %s  [target: %s]\n", r.ID, r.Title, r.Target)
	if r.Error != "" {
		fmt.Fprintf(w, "   FAILED: %s\n", r.Error)
	}
	for _, n := range r.Reduced {
		fmt.Fprintf(w, "   REDUCED (not the scale's size): %s\n", n)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "   metric\tmedian\tmin\tmax\tunit\t")
	for _, m := range r.Metrics {
		fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t\n", m.Name, fmtVal(m.Median), fmtVal(m.Min), fmtVal(m.Max), m.Unit)
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintf(w, "   note: %s\n", n)
	}
}

// WriteJSON writes the report to path.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// MarshalJSON keeps NaN (a metric with no value) out of the JSON.
func (m Metric) MarshalJSON() ([]byte, error) {
	type plain Metric
	clean := func(v float64) float64 {
		if v != v {
			return 0
		}
		return v
	}
	p := plain(m)
	p.Median, p.Min, p.Max = clean(p.Median), clean(p.Min), clean(p.Max)
	return json.Marshal(p)
}

func numCPU() int { return runtime.NumCPU() }

// memTotalMiB reads MemTotal from /proc/meminfo.
func memTotalMiB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "MemTotal:") {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 {
				kb, _ := strconv.ParseInt(fs[1], 10, 64)
				return kb >> 10
			}
		}
	}
	return 0
}
