package node

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
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
