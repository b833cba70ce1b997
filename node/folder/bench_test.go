//go:build unix

package folder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRescan measures B9: a rescan of 10,000 unchanged files (100
// directories of 100) on the real file system, the index a map. Run with
// `go test -run '^$' -bench Rescan ./node/folder/`.
func BenchmarkRescan(b *testing.B) {
	dir := b.TempDir()
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("dir%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("note%03d.md", f)), []byte("# note\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, IgnoreFile), []byte("*.tmp\nbuild/\n"), 0o644)
	fsys, err := OpenOS(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer fsys.Close()
	idx := MapIndex{}
	s, err := NewScanner(ScannerConfig{FS: fsys, Index: idx})
	if err != nil {
		b.Fatal(err)
	}
	r, err := s.Scan(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	record(idx, r)
	if len(idx) != 10101 {
		b.Fatalf("index holds %d records, want 10101", len(idx))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, n := cpuTime(), 0
	for b.Loop() {
		n++
		r, err := s.Scan(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Changes) != 0 || r.Files != 10001 {
			b.Fatalf("rescan found %d changes and %d files, want 0 and 10001", len(r.Changes), r.Files)
		}
	}
	// CPU time per rescan (all goroutines, user+system): what the rescan
	// costs independent of how busy the machine is.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/1e6, "cpu-ms/op")
}
