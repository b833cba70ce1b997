package pack

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

// BenchmarkPut measures Put throughput for 2 KiB and 4 MiB chunks with 1, 4
// and 16 concurrent writers, and reports pack fsyncs per put (fsyncs/put),
// pack and index fsyncs per put (all-fsyncs/put) and CPU time per MB
// stored.
//
// Only the store's work is timed: the chunks (unique windows into one random
// buffer, so b.N chunks cost b.N*8 bytes more than one) and their CIDs are
// made before the timer starts, because a relay receives chunks with their
// CIDs already computed. Put's own verification hash is timed.
//
// After the timed part, the same bytes are written to a plain file twice
// (writeBaseline): with the same number of fsyncs as the store made, evenly
// spaced (disk-MB/s; pct-of-disk is the store's speed against it), and with
// one fsync at the end, as dd conv=fsync does (seq-MB/s, pct-of-seq). They
// run right after the store in the same process, so that a noisy machine
// affects all three alike; compare medians of several runs.
func BenchmarkPut(b *testing.B) {
	for _, size := range []int{2 << 10, 4 << 20} {
		for _, writers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("size=%s/writers=%d", sizeName(size), writers), func(b *testing.B) {
				pool, cids := benchChunks(b, size, b.N)
				s := openStore(b, Config{Dir: b.TempDir()})
				defer s.Close()
				var next atomic.Int64
				var wg sync.WaitGroup
				b.SetBytes(int64(size))
				cpu0 := cpuTime()
				b.ResetTimer()
				for range writers {
					wg.Go(func() {
						for {
							i := int(next.Add(1)) - 1
							if i >= b.N {
								return
							}
							if err := s.Put(cids[i], pool[8*i:8*i+size]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				cpu := cpuTime() - cpu0
				elapsed := b.Elapsed()
				st := s.Stats()
				mb := float64(b.N) * float64(size) / 1e6
				b.ReportMetric(float64(st.Fsyncs)/float64(st.Puts), "fsyncs/put")
				// Pack fsyncs plus synced index writes (renewals and GC
				// relocations only: a batch of new chunks is not synced).
				b.ReportMetric(float64(st.Fsyncs+st.IndexSyncs)/float64(st.Puts), "all-fsyncs/put")
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "puts/s")
				b.ReportMetric(cpu.Seconds()*1e3/mb, "cpu-ms/MB")
				base := writeBaseline(b, pool[:size], b.N, int(st.Fsyncs))
				b.ReportMetric(mb/base.Seconds(), "disk-MB/s")
				b.ReportMetric(100*base.Seconds()/elapsed.Seconds(), "pct-of-disk")
				seq := writeBaseline(b, pool[:size], b.N, 1)
				b.ReportMetric(mb/seq.Seconds(), "seq-MB/s")
				b.ReportMetric(100*seq.Seconds()/elapsed.Seconds(), "pct-of-seq")
			})
		}
	}
}

// benchChunks returns a buffer and the CIDs of n distinct chunks of size
// bytes in it: chunk i is pool[8*i : 8*i+size].
func benchChunks(b *testing.B, size, n int) ([]byte, []cid.Cid) {
	rng := rand.New(rand.NewPCG(uint64(size), uint64(n)))
	pool := make([]byte, size+8*n)
	for i := 0; i+8 <= len(pool); i += 8 {
		binary.LittleEndian.PutUint64(pool[i:], rng.Uint64())
	}
	cids := make([]cid.Cid, n)
	for i := range cids {
		cids[i] = chunkCID(b, pool[8*i:8*i+size])
	}
	return pool, cids
}

// writeBaseline writes buf n times to a fresh file, with fsyncs fsyncs
// spread evenly (the last after the last write), and returns the time taken.
func writeBaseline(b *testing.B, buf []byte, n, fsyncs int) time.Duration {
	f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fsyncs = max(1, min(fsyncs, n))
	start := time.Now()
	done := 0
	for i := range n {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		// Sync after write i when the share of fsyncs due so far grows.
		if due := (i + 1) * fsyncs / n; due > done {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			done = due
		}
	}
	return time.Since(start)
}

// BenchmarkDiskBaseline is the disk's ceiling in the same run: plain
// sequential writes of the same bytes to one file, with an fsync after
// every write (sync=each) or after every 32 MiB, the most one group commit
// holds (sync=32MiB).
func BenchmarkDiskBaseline(b *testing.B) {
	for _, size := range []int{2 << 10, 4 << 20} {
		for _, every := range []int{1, maxBatchBytes / size} {
			name := "each"
			if every > 1 {
				name = "32MiB"
			}
			b.Run(fmt.Sprintf("size=%s/sync=%s", sizeName(size), name), func(b *testing.B) {
				f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				buf := make([]byte, size)
				for i := range buf {
					buf[i] = byte(i * 7)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := range b.N {
					if _, err := f.Write(buf); err != nil {
						b.Fatal(err)
					}
					if (i+1)%every == 0 || i == b.N-1 {
						if err := f.Sync(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkLookup measures index lookups (Has) and verified reads (Get) of
// 2 KiB chunks in a store of 10,000, from the page cache.
func BenchmarkLookup(b *testing.B) {
	s := openStore(b, Config{Dir: b.TempDir()})
	defer s.Close()
	const n = 10_000
	cids := make([]cid.Cid, n)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			buf := make([]byte, 2048)
			for i := w; i < n; i += 16 {
				binary.LittleEndian.PutUint64(buf, uint64(i))
				cids[i] = chunkCID(b, buf)
				if err := s.Put(cids[i], buf); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.Run("Has", func(b *testing.B) {
		for i := range b.N {
			if ok, err := s.Has(cids[i%n]); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
	})
	b.Run("Get", func(b *testing.B) {
		b.SetBytes(2048)
		for i := range b.N {
			if _, err := s.Get(cids[i%n]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
	})
}
