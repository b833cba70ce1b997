package chunk

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"

	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"
)

// Benchmarks report MB/s via b.SetBytes. Each size has its baselines in the
// same run: memmove (copy) and crypto/sha256 of the same bytes. Run with
// GOMAXPROCS=1 go test -run x -bench . -count 3 ./protocol/chunk/
//
// Each also reports cpuMB/s: bytes per second of process CPU time. With
// GOMAXPROCS=1 that is the one-core throughput even when other processes
// share the machine and stretch the wall clock that MB/s is based on.

// measure runs f in the benchmark loop over n bytes per call and reports
// the CPU-time throughput beside the usual wall-clock one.
func measure(b *testing.B, n int, f func()) {
	b.SetBytes(int64(n))
	start := processCPU()
	for b.Loop() {
		f()
	}
	if cpu := processCPU() - start; cpu > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/(float64(cpu)/1e9)/1e6, "cpuMB/s")
	}
}

var benchSizes = []struct {
	name string
	n    int
}{{"64KiB", 64 << 10}, {"256KiB", 256 << 10}, {"64MiB", 64 << 20}}

func BenchmarkBaseline(b *testing.B) {
	for _, s := range benchSizes {
		src := seeded(1, s.n)
		dst := make([]byte, s.n)
		b.Run("memmove/"+s.name, func(b *testing.B) {
			measure(b, s.n, func() {
				copy(dst, src)
			})
		})
		b.Run("sha256/"+s.name, func(b *testing.B) {
			measure(b, s.n, func() {
				sha256.Sum256(src)
			})
		})
	}
}

func BenchmarkBLAKE3(b *testing.B) {
	k := testKeys()
	for _, s := range benchSizes {
		src := seeded(1, s.n)
		b.Run("plain/"+s.name, func(b *testing.B) {
			measure(b, s.n, func() {
				blake3Sum256(src, &guts.IV, 0)
			})
		})
		// The library's own entry point, for comparison: it spawns
		// goroutines and allocates per call.
		b.Run("plain-lukechampine/"+s.name, func(b *testing.B) {
			measure(b, s.n, func() {
				blake3.Sum256(src)
			})
		})
		b.Run("keyed/"+s.name, func(b *testing.B) {
			measure(b, s.n, func() {
				PlainID(k, src)
			})
		})
	}
}

// BenchmarkCut is the cut-point search alone over 64 MiB of random data.
func BenchmarkCut(b *testing.B) {
	data := seeded(1, 64<<20)
	p := DefaultParams()
	measure(b, len(data), func() {
		for off := 0; off < len(data); {
			off += p.Cut(data[off:])
		}
	})
}

func sealInputs() []struct {
	name string
	pt   []byte
} {
	var out []struct {
		name string
		pt   []byte
	}
	for _, n := range []int{64 << 10, 256 << 10} {
		out = append(out,
			struct {
				name string
				pt   []byte
			}{fmt.Sprintf("random/%dKiB", n>>10), seeded(2, n)},
			struct {
				name string
				pt   []byte
			}{fmt.Sprintf("text/%dKiB", n>>10), compressible(n)})
	}
	return out
}

func BenchmarkSeal(b *testing.B) {
	k := testKeys()
	for _, in := range sealInputs() {
		b.Run(in.name, func(b *testing.B) {
			measure(b, len(in.pt), func() {
				if _, err := Seal(k, in.pt); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkAEAD is XChaCha20-Poly1305 sealing alone, for the breakdown.
func BenchmarkAEAD(b *testing.B) {
	aead := mustAEAD([32]byte{1})
	for _, s := range benchSizes[:2] {
		src := seeded(1, s.n)
		dst := make([]byte, 0, s.n+tagSize)
		b.Run(s.name, func(b *testing.B) {
			measure(b, s.n, func() {
				aead.Seal(dst[:0], make([]byte, 24), src, nil)
			})
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	k := testKeys()
	for _, in := range sealInputs() {
		s, _ := Seal(k, in.pt)
		b.Run(in.name, func(b *testing.B) {
			measure(b, len(in.pt), func() {
				if _, err := Open(k, s.CID, s.Envelope); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkPipeline is the whole sending side on 64 MiB: stream the bytes
// through a Chunker, then per chunk keyed hash, compress-or-skip, encrypt
// and CID (AppendSeal into one reused buffer, as a sender streaming chunks
// out would).
func BenchmarkPipeline(b *testing.B) {
	k := testKeys()
	for _, in := range []struct {
		name string
		data func() []byte
	}{
		{"random/64MiB", func() []byte { return seeded(3, 64<<20) }},
		{"text/64MiB", func() []byte { return compressible(64 << 20) }},
	} {
		b.Run(in.name, func(b *testing.B) {
			data := in.data()
			buf := make([]byte, 0, MaxEnvelopeSize)
			measure(b, len(data), func() {
				c, err := NewChunker(bytes.NewReader(data), DefaultParams())
				if err != nil {
					b.Fatal(err)
				}
				for {
					chunk, err := c.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if _, err := AppendSeal(buf[:0], k, chunk); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
