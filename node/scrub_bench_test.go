//go:build unix

package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/weftsync/weft/node/scrub"
)

// cpuTime is this process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScrubPass measures a device's scrub: a whole pass over 64 files
// of 1 MiB (warm page cache), reported as MiB/s by wall clock and MiB per
// CPU second (docs/benchmarks.md, "Device scrub").
func BenchmarkScrubPass(b *testing.B) {
	n, folderPath := testNodeWith(b, Config{NoWatcher: true, NoScrub: true})
	buf := make([]byte, 1<<20)
	for i := range 64 {
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(folderPath, fmt.Sprintf("f%02d.bin", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := n.Scan(ctx); err != nil {
		b.Fatal(err)
	}
	v := n.vaultsNow()[0]
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	var bytes int64
	for range b.N {
		res, _, err := scrub.Pass(ctx, scrubVault{v}, "", "", 0, 0)
		if err != nil || res.Files != 64 || len(res.Corrupt) != 0 {
			b.Fatalf("scrub: %+v, %v", res, err)
		}
		bytes += res.Bytes
	}
	wall, cpu := time.Since(start), cpuTime(b)-cpu0
	mib := float64(bytes) / (1 << 20)
	b.ReportMetric(mib/wall.Seconds(), "MiB/s")
	b.ReportMetric(mib/cpu.Seconds(), "MiB/cpu-s")
}
