package entry

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"lukechampine.com/blake3"
)

// benchBodies are the entries the benchmarks sign and verify:
//   - small: one 200-byte note, the entry a single edit makes;
//   - typical: 16 versions (12 notes of 512 bytes, 4 files of 16 chunks),
//     each superseding one version, as a batch of a first sync makes.
func benchBodies(f fixture) map[string]*Body {
	note := func(path string, n int) Version {
		content := make([]byte, n)
		for i := range content {
			content[i] = byte('a' + i%26)
		}
		v := inlineFile(path, string(content), VersionID{Author: f.other.ID(), Seq: 7, Index: 3})
		return v
	}
	typical := &Body{}
	for i := 0; i < 12; i++ {
		typical.Versions = append(typical.Versions, note(fmt.Sprintf("notes/2026/11/note-%02d.md", i), 512))
	}
	for i := 0; i < 4; i++ {
		v := Version{Path: fmt.Sprintf("media/clip-%d.mp4", i), Kind: KindFile, Mode: 0o644, MTime: 1,
			Hash: blake3.Sum256([]byte{byte(i)}), Supersedes: []VersionID{{Author: f.other.ID(), Seq: 9, Index: uint32(i)}}}
		for j := 0; j < 16; j++ {
			v.Chunks = append(v.Chunks, ChunkRef{chunkCID(fmt.Sprint(i, j)), 131072})
			v.Size += 131072
		}
		typical.Versions = append(typical.Versions, v)
	}
	return map[string]*Body{
		"small":   {Versions: []Version{note("notes/today.md", 200)}},
		"typical": typical,
	}
}

// measure runs f b.N times and reports ops/s (wall clock) and, where the
// platform tells CPU time, cpu-ns/op and cpu-ops/s: what one core does when
// it is not shared.
func measure(b *testing.B, f func()) {
	start := cpuTime()
	for b.Loop() {
		f()
	}
	cpu := cpuTime() - start
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "cpu-ops/s")
	}
}

// BenchmarkEntry measures New (seal, encode, sign), Validate (the full path
// a relay runs: size, decode, canonical check, CID, signature, chain) and
// OpenBody, beside two baselines on the same encoded bytes: SHA-256, and a
// bare ed25519 verification (the floor under verify).
func BenchmarkEntry(b *testing.B) {
	f := newFixture(b)
	bodies := benchBodies(f)
	for _, name := range []string{"small", "typical"} {
		body := bodies[name]
		e := mustNew(b, f.config(Head{}), body)
		raw := e.Bytes()
		b.Run(name+"/sign", func(b *testing.B) {
			cfg := f.config(Head{})
			b.SetBytes(int64(len(raw)))
			measure(b, func() {
				if _, err := New(cfg, body); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(name+"/verify", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			measure(b, func() {
				if _, err := Validate(raw, f.vault, Head{}); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(name+"/open", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			measure(b, func() {
				if _, err := OpenBody(e, f.ek); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(name+"/sha256-baseline", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			measure(b, func() { sha256.Sum256(raw) })
		})
		// The floor under verify: one ed25519 verification of the same
		// bytes, nothing else.
		b.Run(name+"/ed25519-baseline", func(b *testing.B) {
			author := f.id.ID()
			sig := f.id.Sign(raw)
			b.SetBytes(int64(len(raw)))
			measure(b, func() {
				if !author.Verify(raw, sig) {
					b.Fatal("bad signature")
				}
			})
		})
	}
}
