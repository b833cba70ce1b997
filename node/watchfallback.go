package node

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
)

// The watcher's fallback. A folder with more directories than the system
// lets one user watch (inotify's max_user_watches, 8,192 on many systems)
// lost its watcher altogether: the watcher stopped with "no space left on
// device", changes went unseen until the next full rescan 10 minutes
// later, and status said in-sync. Now the watcher watches what it can and
// names the subtrees it could not (watch.Config.OnUnwatched); a
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

// watchFallback is what the fallback rescans cover and when they run. It
// has its own lock and no IO: the time comes in as an argument, and the
// vault runs the rescans it asks for (vault.fallbackScan).
type watchFallback struct {
	mu      sync.Mutex // guards the fields below
	roots   []string   // unwatched subtree roots ("" is the whole folder)
	dead    bool       // the watcher is not running: the whole folder
	why     string     // why it is not running
	last    time.Time  // when the last fallback rescan started
	took    time.Duration
	scanned uint64 // fallback rescans done
}

// noteUnwatched records the watcher's unwatched roots (from its goroutine).
func (v *vault) noteUnwatched(roots []string) {
	if v.fallback.setUnwatched(roots) {
		v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: "watcher-limit",
			Error: "the system's file watch limit is reached: some directories are not watched; weft rescans them instead"})
	}
}

// setUnwatched records the watcher's unwatched roots and reports whether
// it is the first time since everything was watched.
func (f *watchFallback) setUnwatched(roots []string) (first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := len(f.roots)
	f.roots = slices.Clone(roots)
	return was == 0 && len(roots) > 0
}

// setDead records that the watcher is not running (err) or runs (nil).
func (f *watchFallback) setDead(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead, f.why = err != nil, ""
	if err != nil {
		f.why = err.Error()
	} else {
		f.roots = nil
	}
}

// due returns what a fallback rescan must cover at now, or ok == false
// when none is due: nil paths mean the whole folder. A rescan it returns
// counts as started at now.
func (f *watchFallback) due(now time.Time) (paths []string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
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

// ran records that a fallback rescan took took.
func (f *watchFallback) ran(took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.took = took
	f.scanned++
}

// fallbackScan runs a fallback rescan if one is due.
func (v *vault) fallbackScan(ctx context.Context) error {
	paths, ok := v.fallback.due(time.Now())
	if !ok {
		return nil
	}
	start := time.Now()
	_, err := v.scan(ctx, paths)
	v.fallback.ran(time.Since(start))
	return err
}

// errors is the folder's errors[] item while fallback rescans stand in
// for the watcher: the folder syncs, but a change in what is not watched
// is seen only by the next rescan, so it is not in-sync.
func (f *watchFallback) errors() []api.PathMessage {
	f.mu.Lock()
	dead, why := f.dead, f.why
	f.mu.Unlock()
	unwatched, whole, every := f.state()
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

// state is what doctor and /metrics show of the fallback.
func (f *watchFallback) state() (unwatched int, whole bool, every time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.roots), f.dead || slices.Contains(f.roots, ""), max(fallbackEvery, fallbackCostFactor*f.took)
}
