package vaultdb

import (
	"runtime"
	"testing"
)

// TestOpenHeapHeld: an open database holds little heap while idle: the
// index's write buffer (goleveldb's memdb, allocated whole at open) is
// indexWriteBuffer, not goleveldb's 4 MiB default (29 % of an idle
// agent's live heap after B1, docs/benchmarks.md "Where an idle agent's
// live heap is").
func TestOpenHeapHeld(t *testing.T) {
	f := newFixture()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, _ := openDB(t, Config{Dir: t.TempDir(), Vault: f.vault})
	defer db.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("an open database holds %d bytes", held)
	if max := int64(indexWriteBuffer + 1<<20); held > max {
		t.Fatalf("an open database holds %d bytes of heap, want at most %d", held, max)
	}
	runtime.KeepAlive(db)
}
