package pack

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The scrub benchmarks read a store of benchScrubBytes in chunks of the
// chunker's average size (64 KiB).
const (
	benchScrubBytes = 256 << 20
	benchChunkSize  = 64 << 10
)

// scrubBenchStore fills a store in a fresh directory and returns the
// directory; the store is closed (its pages fsynced, so they can be
// dropped from the cache).
func scrubBenchStore(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	s := openStore(b, Config{Dir: dir})
	n := benchScrubBytes / benchChunkSize
	pool, cids := benchChunks(b, benchChunkSize, n)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if err := s.Put(cids[i], pool[8*i:8*i+benchChunkSize]); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	if err := errors.Join(<-errc, s.Close()); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkScrub times whole scrub passes (ScrubPass, 16 MiB steps) over a
// 256 MiB store of 64 KiB chunks: from the page cache (cache=warm), and
// with the packs' pages dropped before each pass (cache=cold, Linux:
// posix_fadvise DONTNEED on the fsynced packs), as the weekly scrub of a
// relay whose data is not in memory reads them. It reports MiB/s of wall
// time, MiB per CPU second (the process's user and system time: reading,
// CRC and BLAKE3) and CPU seconds per wall second (cpu-share: how much of
// one core a pass keeps busy while it runs unpaced).
func BenchmarkScrub(b *testing.B) {
	dir := scrubBenchStore(b)
	for _, cold := range []bool{false, true} {
		name := "cache=warm"
		if cold {
			name = "cache=cold"
		}
		b.Run(name, func(b *testing.B) {
			s := openStore(b, Config{Dir: dir})
			defer s.Close()
			stored := s.Stats().BytesStored
			b.SetBytes(stored)
			var cpu, wall time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if cold {
					if err := dropPageCache(filepath.Join(dir, "packs")); err != nil {
						b.Skip(err)
					}
				}
				b.StartTimer()
				t0, c0 := time.Now(), cpuTime()
				res, err := s.ScrubPass(context.Background(), 0)
				cpu += cpuTime() - c0
				wall += time.Since(t0)
				if err != nil || len(res.Corrupt) != 0 || !res.PassDone {
					b.Fatalf("scrub pass: %v, %d corrupt, done %v", err, len(res.Corrupt), res.PassDone)
				}
			}
			b.StopTimer()
			mib := float64(b.N) * float64(stored) / (1 << 20)
			b.ReportMetric(mib/wall.Seconds(), "MiB/s")
			b.ReportMetric(mib/cpu.Seconds(), "MiB/cpu-s")
			b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-share")
		})
	}
}

// BenchmarkScrubPaced runs the background Scrub for 30 s of wall time with
// the default budget's ratio (one part work in 60) scaled down to 100 ms
// per 6 s, over the 256 MiB store with cold pages, so that a store larger
// than the period allows is read at the budget's ceiling. It reports the
// share of one core the scrub process used (cpu-share) and the rate it
// read at. Each op is one 30 s run: use -benchtime 1x.
func BenchmarkScrubPaced(b *testing.B) {
	dir := scrubBenchStore(b)
	s := openStore(b, Config{Dir: dir})
	defer s.Close()
	var cpu, wall time.Duration
	var bytes uint64
	for range b.N {
		if err := dropPageCache(filepath.Join(dir, "packs")); err != nil {
			b.Log(err)
		}
		before := s.Stats().ScrubBytes
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t0, c0 := time.Now(), cpuTime()
		err := s.Scrub(ctx, ScrubConfig{Budget: Budget{Work: 100 * time.Millisecond, Per: 6 * time.Second}, Period: -1})
		cpu += cpuTime() - c0
		wall += time.Since(t0)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			b.Fatalf("Scrub: %v", err)
		}
		bytes += s.Stats().ScrubBytes - before
	}
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-share")
	b.ReportMetric(float64(bytes)/(1<<20)/wall.Seconds(), "MiB/s")
}
