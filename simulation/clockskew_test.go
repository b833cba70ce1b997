package simulation

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// skewPair is a two-device cluster whose admin's clock is 48 h fast and
// whose other device's is 48 h slow, both running, connected, and done
// measuring each other's clocks.
type skewPair struct {
	c          *Cluster
	fast, slow *Device
}

const skew = 48 * time.Hour

func newSkewPair(t *testing.T) *skewPair {
	t.Helper()
	c, err := NewCluster(ClusterConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fast := c.Device(0)
	fast.ClockOffset = skew
	if err := c.Start(fast); err != nil {
		t.Fatal(err)
	}
	slow, err := c.Join(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	slow.ClockOffset = -skew
	if err := c.AddEdge(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(slow); err != nil {
		t.Fatal(err)
	}
	c.ConnectEdges(context.Background())
	// Each measures the other 96 h off and meets it in the middle: both
	// date entries by the true time.
	waitUntil(t, 30*time.Second, "both clocks corrected", func() string {
		fc, sc := fast.Node().ClockCorrection(), slow.Node().ClockCorrection()
		if (fc+skew).Abs() > time.Second || (sc-skew).Abs() > time.Second {
			return fmt.Sprintf("corrections fast %v, slow %v; want -48h and +48h", fc, sc)
		}
		return ""
	})
	return &skewPair{c: c, fast: fast, slow: slow}
}

// waitUntil polls cond (which says what is still wrong, "" when nothing)
// until it holds or the deadline passes.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s after %v", what, msg, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// edit writes content at p on d, with the modification time d's skewed
// clock would give it, and records it.
func (sp *skewPair) edit(t *testing.T, d *Device, p, content string) {
	t.Helper()
	if err := writeFile(d.FS, p, []byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := d.FS.Chtimes(p, time.Now().Add(d.ClockOffset).UnixNano()); err != nil {
		t.Fatal(err)
	}
	if err := d.Node().Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitHas waits until every device holds want at p.
func (sp *skewPair) waitHas(t *testing.T, p, want string) {
	t.Helper()
	waitUntil(t, 60*time.Second, p+" synced", func() string {
		for _, d := range []*Device{sp.fast, sp.slow} {
			if b, _ := readFile(d.FS, p); string(b) != want {
				return fmt.Sprintf("device %d holds %q, want %q", d.Index, b, want)
			}
		}
		return ""
	})
}

// tick lets the true clock move on well past the error of the clock
// corrections (half a round trip of the simulated link), so that two edits
// made one after the other have distinct, ordered true times.
func tick() {
	start := time.Now()
	for time.Since(start) < 100*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClockSkewLaterEditWins: one device 48 h fast, one 48 h slow, both
// edit a note while cut off from each other. The edit made later in true
// time keeps the name on both devices, whichever device made it, as it
// would with right clocks; the earlier one becomes the conflict copy. Under
// the old rule (file mtime first) the fast device won every time.
func TestClockSkewLaterEditWins(t *testing.T) {
	sp := newSkewPair(t)
	for _, tt := range []struct {
		name          string
		first, second *Device
	}{
		{"slow device edits last", sp.fast, sp.slow},
		{"fast device edits last", sp.slow, sp.fast},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := strings.ReplaceAll(tt.name, " ", "-") + ".md"
			sp.edit(t, sp.fast, p, "base\n")
			sp.waitHas(t, p, "base\n")
			if err := sp.c.Net.Cut(sp.fast.Peer, sp.slow.Peer); err != nil {
				t.Fatal(err)
			}
			earlier := fmt.Sprintf("earlier, by device %d\n", tt.first.Index)
			later := fmt.Sprintf("later, by device %d\n", tt.second.Index)
			sp.edit(t, tt.first, p, earlier)
			tick()
			sp.edit(t, tt.second, p, later)
			if err := sp.c.Net.Heal(sp.fast.Peer, sp.slow.Peer); err != nil {
				t.Fatal(err)
			}
			sp.c.ConnectEdges(context.Background())
			sp.waitHas(t, p, later)
			waitUntil(t, 60*time.Second, "conflict copy", func() string {
				for _, d := range []*Device{sp.fast, sp.slow} {
					if !holdsCopy(d, p, earlier) {
						return fmt.Sprintf("device %d has no conflict copy of %s holding %q (files %v)", d.Index, p, earlier, Files(d.FS))
					}
				}
				return ""
			})
		})
	}
}

// holdsCopy reports whether d holds a conflict copy of p with content.
func holdsCopy(d *Device, p, content string) bool {
	stem := strings.TrimSuffix(p, ".md")
	for _, f := range Files(d.FS) {
		if strings.HasPrefix(f, stem+conflictMark) {
			if b, _ := readFile(d.FS, f); bytes.Equal(b, []byte(content)) {
				return true
			}
		}
	}
	return false
}

// TestClockSkewRestoreAt: three versions of a note, written in turn by the
// fast, the slow and again the fast device. `restore --at` a moment
// between two of them picks the one the user saw then, on either device:
// with entries dated by the skewed clocks, the slow device's version
// seemed two days old (picked for every moment) and the fast device's last
// one lay in the future (never picked).
func TestClockSkewRestoreAt(t *testing.T) {
	sp := newSkewPair(t)
	const p = "plan.md"
	v1, v2, v3 := "one\n", "two, by the slow device\n", "three, by the fast device\n"
	sp.edit(t, sp.fast, p, v1)
	sp.waitHas(t, p, v1)
	tick()
	after1 := time.Now()
	tick()
	sp.edit(t, sp.slow, p, v2)
	sp.waitHas(t, p, v2)
	tick()
	after2 := time.Now()
	tick()
	sp.edit(t, sp.fast, p, v3)
	sp.waitHas(t, p, v3)
	tick()

	for _, d := range []*Device{sp.slow, sp.fast} {
		for _, tt := range []struct {
			at   string
			want string // "" when the disk already holds it: nothing to restore
		}{
			{after1.UTC().Format(time.RFC3339Nano), v1},
			{after2.UTC().Format(time.RFC3339Nano), v2},
			{time.Now().UTC().Format(time.RFC3339Nano), ""},
			{"-0s", ""},
		} {
			res, err := d.Node().API().Restore(context.Background(), api.RestoreRequest{
				Path: filepath.Join(d.Folder, p), At: tt.at, DryRun: true,
			})
			if err != nil {
				t.Fatalf("device %d, restore --at %s: %v", d.Index, tt.at, err)
			}
			var got uint64
			if len(res.Changes) > 0 {
				got = res.Changes[0].Size
			}
			if want := uint64(len(tt.want)); len(res.Changes) > 1 || got != want {
				t.Errorf("device %d, restore --at %s: got %d changes (first of %d bytes), want the version of %d bytes %q",
					d.Index, tt.at, len(res.Changes), got, want, tt.want)
			}
		}
	}
}
