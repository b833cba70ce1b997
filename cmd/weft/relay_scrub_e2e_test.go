package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/relay"
)

// TestRelayScrubRepairs: rot on a relay's disk is found, undone and never
// hides behind "safe". A writes files through a relay and waits for
// `unsafe` 0; bytes are flipped in chunk records of the relay's pack files
// while it runs; `weft relay scrub --metrics` finds and quarantines exactly
// those chunks (and /metrics counts them), the relay tells A it no longer
// holds A's entries (A's `unsafe` rises: a relay-rollback event on A) and
// fetches the chunks again from A, A's `unsafe` goes back to 0, and B, a
// fresh device started after A stops, gets every file byte-identical from
// the relay alone.
func TestRelayScrubRepairs(t *testing.T) {
	rl := startRelay(t, "", "--listen", "/ip4/127.0.0.1/tcp/0", "--metrics", "127.0.0.1:0")
	if rl.metrics == "" {
		t.Fatal("relay printed no metrics address")
	}
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder, "--relay", rl.addr())
	a.up()
	out := a.must("invite")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	b.must("join", lines[len(lines)-1], b.folder) // B starts only at the end

	rng := rand.New(rand.NewPCG(14, 14))
	for i := range 20 {
		a.write(fmt.Sprintf("docs/file-%02d.bin", i), randBytes(rng, 16<<10+rng.IntN(48<<10)))
	}
	a.write("big/archive.bin", randBytes(rng, 2<<20))
	waitStatus(t, a, 2*time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.Files != 21 || f.Unsafe != 0 {
			return fmt.Errorf("%d files, unsafe %d; want 21 and 0", f.Files, f.Unsafe)
		}
		return nil
	})
	want, err := tree(a.folder)
	if err != nil {
		t.Fatal(err)
	}

	events := a.follow(t)
	flipped := flipPackRecords(t, filepath.Join(rl.home, "replicas", "*", "chunks", "packs", "*.pack"), 3)
	if flipped < 8 {
		t.Fatalf("flipped %d records, want at least 8", flipped)
	}

	// Scrub now, through the running relay.
	var rep relay.ScrubReport
	if err := json.Unmarshal([]byte(a.must("relay", "scrub", "--metrics", rl.metrics, "--json")), &rep); err != nil {
		t.Fatalf("scrub report: %v", err)
	}
	corrupt := 0
	for _, v := range rep.Vaults {
		corrupt += len(v.Corrupt)
		if v.Error != "" {
			t.Errorf("scrub of vault %s stopped: %s", v.Vault, v.Error)
		}
	}
	if corrupt != flipped {
		t.Errorf("scrub found %d corrupt chunks, want the %d flipped", corrupt, flipped)
	}
	m, err := scrapeLocalMetrics(rl.metrics)
	if err != nil {
		t.Fatal(err)
	}
	if got := m["weft_relay_scrub_corrupt_chunks_total"]; got != float64(flipped) {
		t.Errorf("weft_relay_scrub_corrupt_chunks_total: got %v, want %d", got, flipped)
	}
	if got := m["weft_relay_scrub_bytes_verified_total"]; got < 2<<20 {
		t.Errorf("weft_relay_scrub_bytes_verified_total: got %v, want at least the 2 MiB file", got)
	}

	// A hears that the relay holds less than it said: at that moment its
	// unsafe count is above 0 (the relay is its only peer). The relay
	// fetches the lost chunks from A, which takes a round trip of every
	// chunk, while the lower vector is sent at once.
	waitEvent(t, events, time.Minute, func(ev api.Event) bool {
		return ev.Type == api.EventError && ev.Kind == "relay-rollback"
	})
	waitStatus(t, a, 2*time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.Unsafe != 0 {
			return fmt.Errorf("unsafe %d, want 0 once A uploaded the chunks again", f.Unsafe)
		}
		return nil
	})
	m, err = scrapeLocalMetrics(rl.metrics)
	if err != nil {
		t.Fatal(err)
	}
	if got := sumSeries(m, "weft_relay_vault_chunks_wanted"); got != 0 {
		t.Errorf("weft_relay_vault_chunks_wanted: got %v, want 0 after the repair", got)
	}
	a.stop()

	// A second pass finds nothing: what was fetched again is good.
	var again relay.ScrubReport
	if err := json.Unmarshal([]byte(a.must("relay", "scrub", "--metrics", rl.metrics, "--json")), &again); err != nil {
		t.Fatalf("scrub report: %v", err)
	}
	if len(again.Vaults) != 1 || again.Vaults[0].Chunks != rep.Vaults[0].Chunks {
		t.Errorf("second scrub: got %+v, want every one of the %d chunks verified", again.Vaults, rep.Vaults[0].Chunks)
	}
	for _, v := range again.Vaults {
		if len(v.Corrupt) > 0 {
			t.Errorf("second scrub found %d corrupt chunks in vault %s, want 0: %v", len(v.Corrupt), v.Vault, v.Corrupt)
		}
	}

	b.up()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := tree(b.folder)
		if err == nil && sameTree(want, got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not get a's folder from the repaired relay:\n%s\nb log:\n%s", diffTree(want, got), b.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// flipPackRecords flips one byte in the middle of the chunk bytes of every
// every-th record of each pack file glob matches, walking the
// records by their headers (docs/storage.md, "Pack record"), and returns
// how many it flipped. Every flipped record fails its CRC and its CID.
func flipPackRecords(t *testing.T, glob string, every int) int {
	t.Helper()
	packs, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	flipped := 0
	for _, p := range packs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for off, i := 0, 0; off+14 <= len(data); i++ {
			if string(data[off:off+4]) != "wpk1" {
				t.Fatalf("%s at %d: no record magic", p, off)
			}
			n := int(binary.BigEndian.Uint16(data[off+8:]))
			l := int(binary.BigEndian.Uint32(data[off+10:]))
			end := off + 14 + n + l
			if end > len(data) {
				break // a record being appended
			}
			if i%every == 0 {
				at := off + 14 + n + l/2
				if _, err := f.WriteAt([]byte{data[at] ^ 0x20}, int64(at)); err != nil {
					t.Fatal(err)
				}
				flipped++
			}
			off = end
		}
		f.Close()
	}
	return flipped
}

// scrapeLocalMetrics reads a relay's /metrics at addr (host:port).
func scrapeLocalMetrics(addr string) (map[string]float64, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("metrics body: %w", err)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, nil
}

func sumSeries(m map[string]float64, name string) float64 {
	var sum float64
	for series, v := range m {
		if series == name || strings.HasPrefix(series, name+"{") {
			sum += v
		}
	}
	return sum
}

// waitEvent waits until the follower has seen an event ok accepts.
func waitEvent(t *testing.T, f *follower, limit time.Duration, ok func(api.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		for _, ev := range f.evs {
			if ok(ev) {
				f.mu.Unlock()
				return
			}
		}
		f.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for _, ev := range f.evs {
		got = append(got, string(ev.Type)+":"+ev.Kind)
	}
	t.Fatalf("no such event after %s; got %v", limit, got)
}
