package watchloop

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/weftsync/weft/node/folder/watch"
	"github.com/weftsync/weft/node/folderguard"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/node/watchfallback"
	"github.com/weftsync/weft/protocol/engine"
)

// Config is how a folder is watched.
type Config struct {
	// Watcher runs a file watcher; without one only the rescans find
	// changes.
	Watcher bool
	// Settle is the watcher's quiet time before a path is reported.
	Settle time.Duration
	// RescanEvery is how often the whole folder is rescanned anyway.
	RescanEvery time.Duration
}

// Vault is what the loop needs of the vault whose folder it watches.
type Vault interface {
	Folder() string
	Log() *slog.Logger
	// Scan scans the folder (paths nil) or paths, with the mass-delete
	// guard's mode, and records what changed.
	Scan(ctx context.Context, paths []string, mode engine.ScanMode) error
	// Ignored says which paths the watcher neither watches nor reports.
	Ignored(path string, isDir bool) bool
	// Unwatched is told, from the watcher's goroutine, the roots of the
	// subtrees the system's watch limit left unwatched.
	Unwatched(roots []string)
	// Watcher reports that a watcher runs (nil) or could not start or
	// stopped (the error): rescans stand in for it then.
	Watcher(err error)
	// WatcherRescan reports that the watcher lost events and asked for a
	// full rescan.
	WatcherRescan()
	// FolderGuard is the folder's stop (node/folderguard).
	FolderGuard() *folderguard.Guard
	// CheckFolder checks the folder's root and marker again; a stop or a
	// resume is logged and signalled by the guard.
	CheckFolder()
	// FallbackScan runs the rescan that stands in for the watcher, if one
	// is due (node/watchfallback).
	FallbackScan(ctx context.Context) error
	// RetryHome reports whether the home disk, full before, has room
	// again: edits that could not be recorded are still on disk.
	RetryHome() bool
	// DeferredDeletions are the paths whose deletion the watcher reported
	// and the mass-delete guard has not judged yet.
	DeferredDeletions() []string
	// Kick asks for a reconcile pass.
	Kick()
}

// Run runs the folder watcher and has settled changes scanned until ctx
// ends. A watcher overflow or failure falls back to full rescans. The
// folder guard is checked every folderguard.Recheck; a folder that comes back
// after a stop gets a new watcher (the old one watched the directories
// that were there before) and a full scan.
//
// firstScan runs once, after the first watcher is ready (its Ready batch)
// or could not start. That watcher defers its walk: firstScan is given
// its WatchDir (nil without a watcher) and adds each directory's watch
// just before it lists the directory, so a change is either an event or
// seen by the scan, and one walk serves both. Scanning first and watching
// after needed a second full scan for the changes in between, at every
// start (0.4-0.5 s of CPU at 100,000 files), and a watcher walking on its
// own a second walk (0.19 s). firstScan reports whether its scan walked
// the folder; if not, the watcher is started again the usual way, so no
// directory is left unwatched.
func Run(ctx context.Context, v Vault, cfg Config, firstScan func(watchDir func(string)) bool) {
	tick := time.NewTicker(cfg.RescanEvery)
	defer tick.Stop()
	recheck := time.NewTicker(folderguard.Recheck)
	defer recheck.Stop()
	for {
		var batches <-chan watch.Batch
		var w *watch.Watcher
		wctx, stopWatcher := context.WithCancel(ctx)
		done := make(chan struct{})
		if cfg.Watcher {
			batches, w = startWatcher(wctx, v, cfg.Settle, done, firstScan != nil)
		} else {
			close(done)
		}
		if first := firstScan; first != nil {
			firstScan = nil
			batches = awaitReady(ctx, batches)
			var watchDir func(string)
			if batches != nil {
				watchDir = w.WatchDir
			}
			if !first(watchDir) && watchDir != nil && ctx.Err() == nil {
				// The scan did not walk the folder, so not every directory
				// is watched: a watcher of the usual kind walks it.
				stopWatcher()
				<-done
				continue
			}
		}
		resumed := untilResumed(ctx, v, batches, tick.C, recheck.C)
		stopWatcher()
		<-done
		if !resumed {
			return
		}
		if err := v.Scan(ctx, nil, engine.ScanFull); err != nil && ctx.Err() == nil && !errors.Is(err, folderguard.ErrStopped) {
			v.Log().Error("scan after the folder came back", "err", err)
		}
		v.Kick()
	}
}

// awaitReady waits for a new watcher's first batch, the one saying its
// watches are in place (watch.Batch.Ready), and consumes it. It returns
// batches, or nil when the watcher stopped without one (it could not
// watch the folder: periodic rescans cover it), and returns at once for a
// nil batches (no watcher) or when ctx ends.
func awaitReady(ctx context.Context, batches <-chan watch.Batch) <-chan watch.Batch {
	if batches == nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return batches
		case b, ok := <-batches:
			if !ok {
				return nil
			}
			if b.Ready {
				return batches
			}
		}
	}
}

// startWatcher starts a folder watcher under ctx and returns its batches
// (nil when none could start: periodic rescans cover the folder). done is
// closed once the watcher has stopped.
//
// With deferWalk the watcher adds no watches itself: the first scan adds
// them as it walks (watch.Config.DeferWalk, through the returned
// watcher's WatchDir).
func startWatcher(ctx context.Context, v Vault, settle time.Duration, done chan<- struct{}, deferWalk bool) (<-chan watch.Batch, *watch.Watcher) {
	w, err := watch.New(watch.Config{
		Dir: v.Folder(), Settle: settle, Logger: v.Log(), DeferWalk: deferWalk,
		Ignored: v.Ignored, OnUnwatched: v.Unwatched,
	})
	if err != nil {
		v.Log().Warn("no file watcher; rescanning the folder instead", "every", watchfallback.Every, "err", err)
		v.Watcher(err)
		close(done)
		return nil, nil
	}
	v.Watcher(nil)
	// Owned by the loop through done: it waits for the watcher to stop
	// before it starts another or returns.
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			v.Log().Warn("file watcher stopped; rescanning the folder instead", "every", watchfallback.Every, "err", err)
			v.Watcher(err)
		}
	}()
	return w.Batches(), w
}

// untilResumed records what the watcher and the periodic rescans find
// until ctx ends (false) or the folder guard lets a stopped folder run
// again (true, signalled on the guard's Resumed by whichever check saw
// it).
func untilResumed(ctx context.Context, v Vault, batches <-chan watch.Batch, rescan, recheck <-chan time.Time) bool {
	fg := v.FolderGuard()
	var guarded time.Time // the last check of a running folder here
	for {
		var err error
		select {
		case <-ctx.Done():
			return false
		case b, ok := <-batches:
			if !ok {
				batches = nil
				continue
			}
			if b.Rescan {
				if !b.Ready {
					v.WatcherRescan()
				}
				err = v.Scan(ctx, nil, engine.ScanFull)
			} else {
				err = v.Scan(ctx, b.Paths, engine.ScanWatched)
			}
		case <-rescan:
			err = v.Scan(ctx, nil, engine.ScanFull)
		case now := <-recheck:
			// A stopped folder is checked at every tick, a running one
			// every folderguard.RecheckRunning (scans and passes check it
			// first anyway).
			if _, stopped := fg.Stopped(); stopped || now.Sub(guarded) >= folderguard.RecheckRunning {
				guarded = now
				v.CheckFolder() // a stop or a resume is logged and signalled by the guard
			}
			if ferr := v.FallbackScan(ctx); ferr != nil && !errors.Is(ferr, folderguard.ErrStopped) && ctx.Err() == nil && !homefull.IsDiskFull(ferr) {
				v.Log().Error("fallback rescan", "err", ferr)
			}
			if v.RetryHome() {
				// Room again on the home's disk: edits that could not be
				// recorded are still on disk.
				err = v.Scan(ctx, nil, engine.ScanFull)
			} else if ps := v.DeferredDeletions(); len(ps) > 0 {
				err = v.Scan(ctx, ps, engine.ScanSettled)
			}
		case <-fg.Resumed():
			return true
		}
		if errors.Is(err, folderguard.ErrStopped) {
			continue // logged once by the guard; the recheck resumes it
		}
		if err != nil && ctx.Err() == nil && !homefull.IsDiskFull(err) { // a full home is logged once, by the vault
			v.Log().Error("scan", "err", err)
		}
	}
}
