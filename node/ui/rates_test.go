package ui

import (
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// The folders page's rate counts a folder's files applied in the last
// 10 s (older ones and other folders' not), their bytes, and the time its
// pending items take at that rate.
func TestFolderRates(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	b := api.NewBus()
	b.Publish(api.Event{Type: api.EventApplied, Folder: "/f", Time: now.Add(-30 * time.Second), Bytes: 1 << 20})
	for i := range 50 {
		b.Publish(api.Event{Type: api.EventApplied, Folder: "/f", Time: now.Add(-time.Duration(i) * 100 * time.Millisecond), Bytes: 2048})
	}
	b.Publish(api.Event{Type: api.EventEntryReceived, Folder: "/f", Time: now})
	b.Publish(api.Event{Type: api.EventApplied, Folder: "/g", Time: now, Bytes: 10})
	rates := folderRates(b.Cursor(0), now, []api.FolderStatus{{Path: "/f", Pending: 100}, {Path: "/g", Pending: 1, PendingBytes: 1000}, {Path: "/h", Pending: 5}})
	f := rates["/f"]
	if f.Items != 5 || f.Bytes != 50*2048/10 || f.Left != 20*time.Second {
		t.Errorf("/f: %+v, want 5 files/s, 10,240 B/s, 20 s left", f)
	}
	if g := rates["/g"]; g.Items != 0.1 || g.Left != 1000*time.Second {
		t.Errorf("/g: %+v, want 0.1 files/s and 1,000 bytes left at 1 B/s: 1,000 s", g)
	}
	if _, ok := rates["/h"]; ok {
		t.Error("/h applied nothing: want no rate")
	}
}
