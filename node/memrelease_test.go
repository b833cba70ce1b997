package node

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/engine"
)

var sink []byte

// TestReleaseIfIdle: freed heap is returned to the OS once every folder is
// settled, and not while one has work in hand.
func TestReleaseIfIdle(t *testing.T) {
	sink = make([]byte, 256<<20)
	for i := 0; i < len(sink); i += 4096 {
		sink[i] = 1 // make the pages resident
	}
	sink = nil
	runtime.GC()
	if free := heapFree(); free <= releaseSlack {
		t.Fatalf("precondition: %d bytes free after dropping 256 MiB, want over %d", free, releaseSlack)
	}
	busy := api.Status{Folders: []api.FolderStatus{{State: "in-sync"}, {State: "syncing"}}}
	if releaseIfIdle(busy) {
		t.Fatal("released while a folder was syncing")
	}
	idle := api.Status{Folders: []api.FolderStatus{{State: "in-sync"}, {State: "offline"}}}
	if !releaseIfIdle(idle) {
		t.Fatal("did not release when every folder was settled")
	}
	if free := heapFree(); free > releaseSlack {
		t.Fatalf("%d bytes still free after the release, want at most %d", free, releaseSlack)
	}
	if releaseIfIdle(idle) {
		t.Fatal("released again with nothing to return")
	}
}

var smallSink [][]byte

// TestReleaseIfIdleUncollectedGarbage: garbage a burst left and no
// collection has found yet (an idle agent runs none for minutes) counts as
// returnable: the release collects and returns it.
func TestReleaseIfIdleUncollectedGarbage(t *testing.T) {
	runtime.GC()
	debug.FreeOSMemory()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but ours
	// 64 MiB of small objects, dropped: garbage, not free memory.
	for range 4 {
		smallSink = make([][]byte, 0, 1<<18)
		for range 1 << 18 {
			smallSink = append(smallSink, make([]byte, 64))
		}
	}
	smallSink = nil
	if free := heapFree(); free > releaseSlack {
		t.Fatalf("precondition: %d bytes free before any collection, want at most %d", free, releaseSlack)
	}
	if r := heapReleasable(); r <= releaseSlack {
		t.Fatalf("%d bytes returnable with 64 MiB of garbage, want over %d", r, releaseSlack)
	}
	idle := api.Status{Folders: []api.FolderStatus{{State: "in-sync"}}}
	if !releaseIfIdle(idle) {
		t.Fatal("did not release the garbage when every folder was settled")
	}
	if r := heapReleasable(); r > releaseSlack {
		t.Fatalf("%d bytes still returnable after the release, want at most %d", r, releaseSlack)
	}
	if releaseIfIdle(idle) {
		t.Fatal("released again with nothing to return")
	}
}

// TestIdleTrimOncePerSpell: the node trims once every folder has been
// settled for trimAfter, once per settled spell, and not while a folder
// has work in hand.
func TestIdleTrimOncePerSpell(t *testing.T) {
	busy := api.Status{Folders: []api.FolderStatus{{State: "in-sync"}, {State: "syncing"}}}
	idle := api.Status{Folders: []api.FolderStatus{{State: "in-sync"}, {State: "offline"}}}
	t0 := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		st   api.Status
		at   time.Duration
		want bool
	}{
		{busy, 0, false},
		{idle, 5 * time.Second, false},
		{idle, 5*time.Second + trimAfter - 1, false},
		{idle, 5*time.Second + trimAfter, true},
		{idle, 5*time.Second + 2*trimAfter, false}, // once per spell
		{busy, 40 * time.Second, false},
		{idle, 45 * time.Second, false},
		{busy, 50 * time.Second, false}, // a spell shorter than trimAfter
		{idle, 55 * time.Second, false},
		{idle, 55*time.Second + trimAfter, true},
	}
	var s idleTrim
	for i, tt := range steps {
		if got := s.step(tt.st, t0.Add(tt.at)); got != tt.want {
			t.Fatalf("step %d (at %v): got %v, want %v", i, tt.at, got, tt.want)
		}
	}
}

// TestIdleTrimEngine: the idle trim lets go of the engine's move hashes
// once DeleteWindow has passed on the device's clock, and not before.
func TestIdleTrimEngine(t *testing.T) {
	var skew atomic.Int64
	n, folder := testNodeWith(t, Config{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	for i := range 20 {
		writeFile(t, folder, fmt.Sprintf("note%02d.md", i), []byte(fmt.Sprintf("note %d\n", i)))
	}
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	hashes := func() (added int) {
		v.engine.Do(func(e *engine.Engine) { added, _ = e.Deletes.MoveHashes() })
		return added
	}
	if got := hashes(); got != 20 {
		t.Fatalf("precondition: %d move hashes after the scan, want the 20 notes'", got)
	}
	n.trimIdle()
	if got := hashes(); got != 20 {
		t.Fatalf("%d move hashes after a trim within DeleteWindow, want 20", got)
	}
	skew.Store(int64(engine.DeleteWindow))
	n.trimIdle()
	if got := hashes(); got != 0 {
		t.Fatalf("%d move hashes after a trim past DeleteWindow, want none", got)
	}
}

// TestIdleTrimReleasesAfterABurst: the idle trim returns the heap when a
// burst left more than trimSlack to return, and costs no collection when
// it did not (a spell after a small edit).
func TestIdleTrimReleasesAfterABurst(t *testing.T) {
	n, _ := testNode(t)
	runtime.GC()
	debug.FreeOSMemory()
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but ours
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gcs := ms.NumGC
	if n.trimIdle() {
		t.Fatal("the trim released with nothing to return")
	}
	runtime.ReadMemStats(&ms)
	if ms.NumGC != gcs {
		t.Fatalf("the trim ran %d collections with nothing to return, want none", ms.NumGC-gcs)
	}
	// A burst: 16 MiB of small objects, dropped.
	for range 1 << 18 {
		smallSink = append(smallSink, make([]byte, 64))
	}
	smallSink = nil
	if !n.trimIdle() {
		t.Fatalf("the trim did not release %d returnable bytes", heapReleasable())
	}
	if r := heapReleasable(); r > trimSlack {
		t.Fatalf("%d bytes returnable after the trim, want at most %d", r, trimSlack)
	}
}
