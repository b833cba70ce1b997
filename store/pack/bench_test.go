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

	"github.com/ipfs/go-cid"
)

// BenchmarkPut measures Put throughput for 2 KiB and 4 MiB chunks with 1, 4
// and 16 concurrent writers, and reports pack fsyncs per put. Each writer
// makes unique chunks by stamping a counter into a random buffer and
// hashing it (the CID), as a real writer would; Put hashes again to verify.
func BenchmarkPut(b *testing.B) {
	for _, size := range []int{2 << 10, 4 << 20} {
		for _, writers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("size=%s/writers=%d", sizeName(size), writers), func(b *testing.B) {
				s := openStore(b, Config{Dir: b.TempDir()})
				defer s.Close()
				var next atomic.Int64
				var wg sync.WaitGroup
				b.SetBytes(int64(size))
				b.ResetTimer()
				for w := range writers {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(w), 1))
						buf := make([]byte, size)
						for i := range buf {
							buf[i] = byte(rng.Uint32())
						}
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							binary.LittleEndian.PutUint64(buf, uint64(i))
							if err := s.Put(chunkCID(b, buf), buf); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				st := s.Stats()
				b.ReportMetric(float64(st.Fsyncs)/float64(st.Puts), "fsyncs/put")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
			})
		}
	}
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
