//go:build unix

package folder

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkWriteFiles measures the receiver's side of B1 in process: 10,000
// new notes of 2 KiB in 60 directories, written in WriteFiles batches of
// 256 (as node/ does) into an empty folder on the real file system. Run
// with `go test -run '^$' -bench WriteFiles -benchtime 5x ./node/folder/`.
// cpu-ms/op (user + system, all goroutines) is the load-independent part.
func BenchmarkWriteFiles(b *testing.B) {
	const notes, dirs, batch = 10000, 60, 256
	body := bytes.Repeat([]byte("0123456789abcdef"), 2<<10/16)
	base := b.TempDir()
	b.ReportAllocs()
	var cpu time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(base, fmt.Sprint(n))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		fsys, err := OpenOS(dir)
		if err != nil {
			b.Fatal(err)
		}
		a, err := NewApplier(ApplierConfig{FS: fsys, Index: MapIndex{}})
		if err != nil {
			b.Fatal(err)
		}
		n++
		c0 := cpuTime()
		b.StartTimer()
		for i := 0; i < notes; i += batch {
			var ws []FileWrite
			for j := i; j < min(i+batch, notes); j++ {
				ws = append(ws, FileWrite{
					Version: FileVersion{Path: fmt.Sprintf("d%02d/note%05d.md", j%dirs, j), Size: int64(len(body)), MTime: 1e18 + int64(j)},
					Content: bytes.NewReader(body),
				})
			}
			for k, r := range a.WriteFiles(context.Background(), ws) {
				if r.Err != nil {
					b.Fatalf("%s: %v", ws[k].Version.Path, r.Err)
				}
			}
		}
		b.StopTimer()
		cpu += cpuTime() - c0 // count only the timed part
		fsys.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(n)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(cpu)/float64(n)/notes/1e3, "cpu-us/file")
}
