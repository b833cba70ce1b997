package protocol

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

// BenchmarkGraphFootprint reports the live heap a graph holds per version
// (bytes/version) for 100,000 one-version paths, as a vault of 100,000
// notes has: the graph is most of what an agent holds per file (issue 16's
// memory targets; docs/benchmarks.md, "Footprint at 100,000 small files:
// one copy of each version"). The count does not depend on load.
func BenchmarkGraphFootprint(b *testing.B) {
	const n = 100_000
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("d%d/n%d.md", i/1000, i%1000)
	}
	author := keys.DeviceID{1}
	for b.Loop() {
		before := liveHeap()
		g := NewGraph()
		for i, p := range paths {
			seq := uint64(i/100 + 1)
			if err := g.Add(Version{ID: VersionID{Author: author, Seq: seq, Index: uint32(i % 100)}, Path: p, Kind: KindFile, Size: 1024, Clock: seq}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(liveHeap()-before)/n, "bytes/version")
		runtime.KeepAlive(g)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
