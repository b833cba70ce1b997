package node

import (
	"runtime"
	"runtime/debug"
	"testing"

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
