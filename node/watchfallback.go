package node

import (
	"context"
	"time"

	"github.com/weftsync/weft/node/api"
)

// The watcher's fallback (node/watchfallback): rescans of what the watcher
// cannot watch, which the vault runs when they are due.

// noteUnwatched records the watcher's unwatched roots (from its goroutine).
func (v *vault) noteUnwatched(roots []string) {
	if v.fallback.SetUnwatched(roots) {
		v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: "watcher-limit",
			Error: "the system's file watch limit is reached: some directories are not watched; weft rescans them instead"})
	}
}

// fallbackScan runs a fallback rescan if one is due.
func (v *vault) fallbackScan(ctx context.Context) error {
	paths, ok := v.fallback.Due(time.Now())
	if !ok {
		return nil
	}
	start := time.Now()
	_, err := v.scan(ctx, paths)
	v.fallback.Ran(time.Since(start))
	return err
}
