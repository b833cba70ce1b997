package ui

import (
	"time"

	"github.com/weftsync/weft/node/api"
)

// rateWindow is how far back the folders page measures a sync's rate.
const rateWindow = 10 * time.Second

// folderRate is a folder's recent sync rate, from the file-applied events
// of the last rateWindow.
type folderRate struct {
	Items float64 // files applied per second
	Bytes float64 // bytes of them per second
	// Left is the time the pending items and bytes take at that rate (0:
	// unknown).
	Left time.Duration
}

// folderRates measures each folder's rate over the events the agent
// keeps (a burst larger than api.RetainEvents inside the window is
// measured over the part kept, from its oldest event's time), and the
// time its pending items and bytes take at that rate.
func folderRates(c *api.Cursor, now time.Time, folders []api.FolderStatus) map[string]folderRate {
	c.Rewind(api.RetainEvents)
	since := now.Add(-rateWindow)
	type sum struct {
		items  int
		bytes  int64
		oldest time.Time
	}
	sums := map[string]*sum{}
	for ev, ok := c.TryNext(); ok; ev, ok = c.TryNext() {
		if ev.Type != api.EventApplied || ev.Time.Before(since) {
			continue
		}
		s := sums[ev.Folder]
		if s == nil {
			s = &sum{oldest: ev.Time}
			sums[ev.Folder] = s
		}
		s.items++
		s.bytes += ev.Bytes
	}
	out := map[string]folderRate{}
	for _, f := range folders {
		s := sums[f.Path]
		if s == nil {
			continue
		}
		// Measured from the window's start, or from the oldest event kept
		// when older ones fell out of the ring.
		secs := rateWindow.Seconds()
		if len(sums) == 1 && s.items >= api.RetainEvents {
			secs = max(now.Sub(s.oldest).Seconds(), 1)
		}
		r := folderRate{Items: float64(s.items) / secs, Bytes: float64(s.bytes) / secs}
		// The slower of the items' and the bytes' estimates: many small
		// files are bound by the files, a large one by its bytes.
		var left float64
		if r.Items > 0 && f.Pending > 0 {
			left = float64(f.Pending) / r.Items
		}
		if r.Bytes > 0 && f.PendingBytes > 0 {
			left = max(left, float64(f.PendingBytes)/r.Bytes)
		}
		r.Left = time.Duration(left * float64(time.Second)).Round(time.Second)
		out[f.Path] = r
	}
	return out
}
