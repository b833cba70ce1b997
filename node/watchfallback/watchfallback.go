package watchfallback

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
)

// Every is the shortest interval of the fallback rescans.
const Every = 10 * time.Second

// CostFactor: the interval of fallback rescans is at least this
// many times the last one's duration.
const CostFactor = 20

// Fallback is what the fallback rescans cover and when they run. It
// has its own lock and no IO: the time comes in as an argument, and the
// vault runs the rescans it asks for (vault.fallbackScan).
type Fallback struct {
	mu      sync.Mutex // guards the fields below
	roots   []string   // unwatched subtree roots ("" is the whole folder)
	dead    bool       // the watcher is not running: the whole folder
	why     string     // why it is not running
	last    time.Time  // when the last fallback rescan started
	took    time.Duration
	scanned uint64 // fallback rescans done
}

// SetUnwatched records the watcher's unwatched roots and reports whether
// it is the first time since everything was watched.
func (f *Fallback) SetUnwatched(roots []string) (first bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := len(f.roots)
	f.roots = slices.Clone(roots)
	return was == 0 && len(roots) > 0
}

// SetDead records that the watcher is not running (err) or runs (nil).
func (f *Fallback) SetDead(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead, f.why = err != nil, ""
	if err != nil {
		f.why = err.Error()
	} else {
		f.roots = nil
	}
}

// Due returns what a fallback rescan must cover at now, or ok == false
// when none is due: nil paths mean the whole folder. A rescan it returns
// counts as started at now.
func (f *Fallback) Due(now time.Time) (paths []string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dead && len(f.roots) == 0 {
		return nil, false
	}
	if now.Sub(f.last) < max(Every, CostFactor*f.took) {
		return nil, false
	}
	f.last = now
	if f.dead || slices.Contains(f.roots, "") {
		return nil, true
	}
	return slices.Clone(f.roots), true
}

// Ran records that a fallback rescan took took.
func (f *Fallback) Ran(took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.took = took
	f.scanned++
}

// Errors is the folder's errors[] item while fallback rescans stand in
// for the watcher: the folder syncs, but a change in what is not watched
// is seen only by the next rescan, so it is not in-sync.
func (f *Fallback) Errors() []api.PathMessage {
	f.mu.Lock()
	dead, why := f.dead, f.why
	f.mu.Unlock()
	unwatched, whole, every := f.State()
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
	if ns, sys := ReadLimit("/proc/sys/user/max_inotify_watches"), ReadLimit("/proc/sys/fs/inotify/max_user_watches"); ns > 0 && (sys == 0 || ns < sys) {
		return fmt.Sprintf("Raise the limit of the user namespace weft runs in (%d): write a larger number to /proc/sys/user/max_inotify_watches in it.", ns)
	}
	return "Raise the limit: sudo sysctl fs.inotify.max_user_watches=524288 (and put it in /etc/sysctl.d/ to keep it)."
}

// State is what doctor and /metrics show of the fallback.
func (f *Fallback) State() (unwatched int, whole bool, every time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.roots), f.dead || slices.Contains(f.roots, ""), max(Every, CostFactor*f.took)
}

// ReadLimit reads a number from a /proc/sys file; 0 when unknown.
func ReadLimit(f string) int {
	b, err := os.ReadFile(f)
	if err != nil {
		return 0
	}
	m, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return m
}
