package chunk

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenPlaintexts cover each path of the compression rule.
func goldenPlaintexts() []struct {
	name string
	pt   []byte
} {
	return []struct {
		name string
		pt   []byte
	}{
		{"empty", nil},
		{"short", []byte("hello, weft\n")},
		{"small-compressible", compressible(1000)},
		{"sampled-compressible", compressible(20000)},
		{"sampled-incompressible", seeded(3, 8192)},
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s line %d:\ngot  %.200s\nwant %.200s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: got %d lines, want %d", path, len(gl), len(wl))
	}
}

// TestGoldenEnvelopes pins the envelope format, key derivation and zstd
// output: every line is "name cid envelope-hex" for testKeys. A failure
// means envelopes changed, which changes every CID: that needs a new
// FormatV1 value, not -update (docs/protocol/chunks.md, "Versions").
func TestGoldenEnvelopes(t *testing.T) {
	k := testKeys()
	var b strings.Builder
	b.WriteString("# name cid envelope-hex; keys: epoch 7, Chunk 00..1f, ChunkID 80..9f\n")
	for _, g := range goldenPlaintexts() {
		s, err := Seal(k, g.pt)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %x\n", g.name, s.CID, s.Envelope)
	}
	golden(t, "envelopes.golden", b.String())

	// The stored vectors must open to their plaintexts.
	f, err := os.ReadFile(filepath.Join("testdata", "envelopes.golden"))
	if err != nil {
		t.Fatal(err)
	}
	pts := goldenPlaintexts()
	sc := bufio.NewScanner(bytes.NewReader(f))
	sc.Buffer(nil, 1<<20)
	i := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] == "#" {
			continue
		}
		env, err := hex.DecodeString(fields[2])
		if err != nil {
			t.Fatal(err)
		}
		got, err := Open(k, SumCID(env), env)
		if err != nil || !bytes.Equal(got, pts[i].pt) || SumCID(env).String() != fields[1] {
			t.Errorf("%s: stored vector does not open to its plaintext: %v", fields[0], err)
		}
		i++
	}
}

// TestGoldenBoundaries pins the cutter (gear table, predicate, bounds):
// chunk end offsets of seeded pseudo-random buffers.
func TestGoldenBoundaries(t *testing.T) {
	var b strings.Builder
	for _, c := range []struct {
		name string
		p    Params
		seed uint64
		n    int
	}{
		{"default", DefaultParams(), 42, 4 << 20},
		{"small", small, 43, 64 << 10},
	} {
		fmt.Fprintf(&b, "%s min=%d avg=%d max=%d seed=%d size=%d:", c.name, c.p.Min, c.p.Avg, c.p.Max, c.seed, c.n)
		for _, e := range c.p.Boundaries(seeded(c.seed, c.n)) {
			b.WriteString(" " + strconv.Itoa(e))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "gear[0..3]: %016x %016x %016x %016x\n", gear[0], gear[1], gear[2], gear[3])
	golden(t, "boundaries.golden", b.String())
}
