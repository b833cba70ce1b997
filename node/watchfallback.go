package node

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/weftsync/weft/node/api"
)

// The watcher's fallback. A folder with more directories than the system
// lets one user watch (inotify's max_user_watches, 8,192 on many systems)
// lost its watcher altogether: the watcher stopped with "no space left on
// device", changes went unseen until the next full rescan 10 minutes
// later, and status said in-sync. Now the watcher watches what it can and
// names the subtrees it could not (folder.WatcherConfig.OnUnwatched); a
// watcher that cannot run at all leaves the whole folder unwatched. Either
// way weft rescans what is not watched, every fallbackEvery or, when
// those rescans take long, every fallbackCostFactor times the last one's
// duration (at most 5 % of a core spent on them), so a change there is
// seen within seconds rather than minutes. Doctor says so, with how to
// raise the limit, and /metrics counts the unwatched directories.

// fallbackEvery is the shortest interval of the fallback rescans.
const fallbackEvery = 10 * time.Second

// fallbackCostFactor: the interval of fallback rescans is at least this
// many times the last one's duration.
const fallbackCostFactor = 20

// watchFallback is what the fallback rescans cover and when they run;
// guarded by vault.mu.
type watchFallback struct {
	roots   []string  // unwatched subtree roots ("" is the whole folder)
	dead    bool      // the watcher is not running: the whole folder
	why     string    // why it is not running
	last    time.Time // when the last fallback rescan started
	took    time.Duration
	scanned uint64 // fallback rescans done
}

// noteUnwatched records the watcher's unwatched roots (from its goroutine).
func (v *vault) noteUnwatched(roots []string) {
	v.mu.Lock()
	was := len(v.fallback.roots)
	v.fallback.roots = slices.Clone(roots)
	v.mu.Unlock()
	if was == 0 && len(roots) > 0 {
		v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: "watcher-limit",
			Error: "the system's file watch limit is reached: some directories are not watched; weft rescans them instead"})
	}
}

// noteWatcherDead records that the watcher is not running (err) or runs
// (nil).
func (v *vault) noteWatcherDead(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fallback.dead, v.fallback.why = err != nil, ""
	if err != nil {
		v.fallback.why = err.Error()
	} else {
		v.fallback.roots = nil
	}
}

// fallbackPaths returns what a fallback rescan must cover now, or ok ==
// false when none is due: nil paths mean the whole folder.
func (v *vault) fallbackPaths(now time.Time) (paths []string, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := &v.fallback
	if !f.dead && len(f.roots) == 0 {
		return nil, false
	}
	if now.Sub(f.last) < max(fallbackEvery, fallbackCostFactor*f.took) {
		return nil, false
	}
	f.last = now
	if f.dead || slices.Contains(f.roots, "") {
		return nil, true
	}
	return slices.Clone(f.roots), true
}

// fallbackScan runs a fallback rescan if one is due.
func (v *vault) fallbackScan(ctx context.Context) error {
	paths, ok := v.fallbackPaths(time.Now())
	if !ok {
		return nil
	}
	start := time.Now()
	_, err := v.scan(ctx, paths)
	v.mu.Lock()
	v.fallback.took = time.Since(start)
	v.fallback.scanned++
	v.mu.Unlock()
	return err
}

// fallbackErrors is the folder's errors[] item while fallback rescans
// stand in for the watcher: the folder syncs, but a change in what is not
// watched is seen only by the next rescan, so it is not in-sync.
func (v *vault) fallbackErrors() []api.PathMessage {
	v.mu.Lock()
	dead, why := v.fallback.dead, v.fallback.why
	v.mu.Unlock()
	unwatched, whole, every := v.fallbackState()
	switch {
	case dead:
		return []api.PathMessage{{Code: api.CodeWatcherFailed,
			Reason: fmt.Sprintf("the file watcher is not running (%s), so weft rescans the folder instead, every %s, and a change is seen only then", why, every.Round(time.Second))}}
	case unwatched == 0:
		return nil
	}
	what := fmt.Sprintf("%d directories of the folder (and everything below them) are not watched", unwatched)
	if whole {
		what = "the folder is not watched"
	}
	return []api.PathMessage{{Code: api.CodeWatcherLimit,
		Reason: fmt.Sprintf("%s: the system's file watch limit is reached, so weft rescans instead, every %s, and a change there is seen only then. %s",
			what, every.Round(time.Second), raiseWatchLimit())}}
}

// raiseWatchLimit says how to raise the watch limit that applies here.
func raiseWatchLimit() string {
	if runtime.GOOS != "linux" {
		return "Raise the open-files limit of the user that runs weft (ulimit -n)."
	}
	if ns, sys := readLimit("/proc/sys/user/max_inotify_watches"), readLimit("/proc/sys/fs/inotify/max_user_watches"); ns > 0 && (sys == 0 || ns < sys) {
		return fmt.Sprintf("Raise the limit of the user namespace weft runs in (%d): write a larger number to /proc/sys/user/max_inotify_watches in it.", ns)
	}
	return "Raise the limit: sudo sysctl fs.inotify.max_user_watches=524288 (and put it in /etc/sysctl.d/ to keep it)."
}

// fallbackState is what doctor and /metrics show of the fallback.
func (v *vault) fallbackState() (unwatched int, whole bool, every time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := v.fallback
	return len(f.roots), f.dead || slices.Contains(f.roots, ""), max(fallbackEvery, fallbackCostFactor*f.took)
}
