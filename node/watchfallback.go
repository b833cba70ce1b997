package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folderguard"
	"github.com/weftsync/weft/node/watchloop"
	"github.com/weftsync/weft/protocol/engine"
)

// The watcher's fallback (node/watchfallback): rescans of what the watcher
// cannot watch, which the vault runs when they are due; and the vault as
// node/watchloop sees it.

// noteUnwatched records the watcher's unwatched roots (from its goroutine).
func (v *vault) noteUnwatched(roots []string) {
	if v.fallback.SetUnwatched(roots) {
		v.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: "watcher-limit",
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

// watchSide is the vault as node/watchloop sees it while it watches the
// folder.
type watchSide struct{ v *vault }

var _ watchloop.Vault = watchSide{}

func (w watchSide) Folder() string                         { return w.v.cfg.Folder }
func (w watchSide) Log() *slog.Logger                      { return w.v.log }
func (w watchSide) Unwatched(roots []string)               { w.v.noteUnwatched(roots) }
func (w watchSide) WatcherRescan()                         { w.v.report.watcherRescan() }
func (w watchSide) FolderGuard() *folderguard.Guard        { return w.v.fguard }
func (w watchSide) CheckFolder()                           { _, _ = w.v.guard() }
func (w watchSide) FallbackScan(ctx context.Context) error { return w.v.fallbackScan(ctx) }
func (w watchSide) RetryHome() bool                        { return w.v.retryHome() }         // homefull.go
func (w watchSide) DeferredDeletions() []string            { return w.v.deferredDeletions() } // massdelete.go
func (w watchSide) Kick()                                  { w.v.kick() }

func (w watchSide) Scan(ctx context.Context, paths []string, mode engine.ScanMode) error {
	_, err := w.v.scanAs(ctx, paths, mode)
	return err
}

func (w watchSide) Ignored(p string, isDir bool) bool {
	ig := w.v.scanner.Ignore()
	return ig != nil && ig.Match(p, isDir)
}

func (w watchSide) Watcher(err error) {
	if err == nil {
		w.v.report.watcherRunning()
	} else {
		w.v.report.watcherFailed(err)
	}
	w.v.fallback.SetDead(err)
}
