package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/internal/svgchart"
)

var weftBin string

// TestMain builds the weft binary once, without the race detector even
// under `go test -race`: the agents are what is measured, and a race build
// would make them several times slower.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weft-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weftBin = filepath.Join(dir, "weft")
	out, err := exec.Command("go", "build", "-o", weftBin, "github.com/weftsync/weft/cmd/weft").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building weft: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestTiny runs B1, B2 and B1-relay at a tiny scale on real processes
// (agents and a relay) and checks only what does not depend on load: every
// file arrived byte-identical (the scenarios fail otherwise), the bytes on
// the wire stay within a sane bound of the payload, and, where strace
// works, the fsyncs per note.
func TestTiny(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, Config{Bin: weftBin, Scale: Tiny, Runs: 1, Dir: t.TempDir(), Out: &out, Fsyncs: true})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	got := map[string]Result{}
	for _, r := range rep.Results {
		got[r.ID] = r
		if r.Skipped != "" {
			t.Errorf("%s: skipped: %s", r.ID, r.Skipped)
		}
		if r.Error != "" {
			t.Errorf("%s: %s", r.ID, r.Error)
		}
	}
	for _, id := range []string{"B1", "B2", "B1-relay"} {
		if _, ok := got[id]; !ok {
			t.Errorf("%s: no result", id)
		}
	}
	if len(got) != 3 {
		t.Errorf("got %d results, want 3 (B1, B2, B1-relay)", len(got))
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out.String())
	}
	z := sizesFor(Tiny)
	noteBytes := float64(z.notes * 2 << 10)
	// B1-relay: B got every note from the relay alone (the scenario fails
	// otherwise); each side moved the notes about once, not per peer.
	br := got["B1-relay"]
	if m, ok := br.Metric("files"); !ok || m.Median != float64(z.notes) {
		t.Errorf("B1-relay files: got %+v, want %d", m, z.notes)
	}
	for _, name := range []string{"bytes sent by A / note bytes", "bytes received by B / note bytes"} {
		if m, ok := br.Metric(name); !ok || m.Max*noteBytes > 3*noteBytes+64<<10 {
			t.Errorf("B1-relay %s: got %.2fx, want <= 3x + 64 KiB", name, m.Max)
		}
	}
	for _, name := range []string{"fsyncs per note on the relay, upload", "fsyncs per note on the relay, download"} {
		// A relay that fsyncs once per note or more has lost its group
		// commit (the target is < 0.1 at 10,000 notes).
		if m, ok := br.Metric(name); ok {
			if m.Max > 1 {
				t.Errorf("B1-relay %s: got %.3f, want <= 1", name, m.Max)
			}
			t.Logf("B1-relay %s: %.3f", name, m.Max)
		}
	}
	b1 := got["B1"]
	if m, ok := b1.Metric("files"); !ok || m.Median != float64(z.notes) {
		t.Errorf("B1 files: got %+v, want %d", m, z.notes)
	}
	// Received bytes <= 3x the note bytes + 64 KiB.
	if m, ok := b1.Metric("bytes received by B / note bytes"); !ok || m.Max*noteBytes > 3*noteBytes+64<<10 {
		t.Errorf("B1 bytes received by B: got %.2fx the note bytes, want <= 3x + 64 KiB", m.Max)
	}
	if m, ok := b1.Metric("fsyncs per note, B receiving"); ok {
		// Counts, not times: a receiver that fsyncs each note several
		// times over has lost its group commit.
		if m.Max > 3 {
			t.Errorf("B1 fsyncs per note on B: got %.2f, want <= 3", m.Max)
		}
		t.Logf("B1 fsyncs per note on B: %.3f", m.Max)
	} else {
		t.Logf("fsync counts skipped: %v", b1.Notes)
	}
	b2 := got["B2"]
	for _, name := range []string{"end to end p50", "wire p50"} {
		if m, ok := b2.Metric(name); !ok || len(m.Values) != 1 || math.IsNaN(m.Median) {
			t.Errorf("B2 %s: got %+v, want one value", name, m)
		}
	}
	if n := len(b2.Series["B2 end-to-end latency (ms)"]); n != z.edits {
		t.Errorf("B2 latency samples: got %d, want %d", n, z.edits)
	}
	// Each append is 1 KiB of new bytes in a small note: the entry,
	// the chunk(s) and acknowledgements, not the whole history.
	if m, ok := b2.Metric("bytes received by B per append"); !ok || m.Max > 3+64 {
		t.Errorf("B2 bytes received per append: got %.1f KiB, want <= 67 KiB", m.Max)
	}
	svgDir := t.TempDir()
	paths, err := rep.WriteSVG(svgDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		checkXML(t, p)
	}
	if err := rep.WriteJSON(filepath.Join(svgDir, "r.json")); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
}

func checkXML(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Errorf("%s: not well-formed XML: %v", path, err)
			}
			return
		}
	}
}

func TestParseStraceSummary(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
	}{
		{"both", `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 99.00    0.120000          60      2000           fsync
  1.00    0.001000          10        31         2 fdatasync
------ ----------- ----------- --------- --------- ----------------
100.00    0.121000                  2031         2 total
`, 2031},
		{"none", "% time     seconds  usecs/call     calls    errors syscall\n------ ----------- ----------- --------- --------- ----------------\n100.00    0.000000                     0           total\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStraceSummary(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v, want %d", got, err, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	tests := []struct {
		p, want float64
	}{{0, 1}, {50, 3}, {100, 5}, {25, 2}, {95, 4.8}}
	for _, tt := range tests {
		if got := percentile(xs, tt.p); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("percentile(%v): got %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := median([]float64{1, 2, 3, 4}); got != 2.5 {
		t.Errorf("median of 1..4: got %v, want 2.5", got)
	}
	if !math.IsNaN(median(nil)) {
		t.Errorf("median of none: want NaN")
	}
}

func TestReadProcSelf(t *testing.T) {
	u, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.PeakRSS <= 0 || u.CPUSeconds < 0 {
		t.Fatalf("got %+v, want a positive peak RSS", u)
	}
}

func TestChartIsWellFormed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.svg")
	svg := svgchart.Lines("a < b & c", "x", "y", []svgchart.Line{{Name: "one", Points: svgchart.CDF([]float64{3, 1, 2})}, {Name: "two", Points: [][2]float64{{0, 0}, {1, 7}}}})
	if err := os.WriteFile(p, []byte(svg), 0o644); err != nil {
		t.Fatal(err)
	}
	checkXML(t, p)
	if !strings.Contains(svg, "<polyline") {
		t.Fatalf("got no polyline")
	}
}
