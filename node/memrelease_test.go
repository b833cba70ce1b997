package node

import (
	"runtime"
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
