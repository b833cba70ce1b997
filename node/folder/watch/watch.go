package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/weftsync/weft/node/folder"
)

// DefaultSettle is how long a path must be quiet before the watcher
// reports it.
const DefaultSettle = 100 * time.Millisecond

// defaultMaxPending bounds the paths the watcher tracks; past it, it asks
// for a full rescan instead.
const defaultMaxPending = 10000

// Batch is what the watcher reports: settled paths to scan (with
// Scanner.ScanPaths), or, when Rescan is set, a request for a full scan
// because events were lost (inotify overflow, too many pending paths, a
// watch that could not be added).
//
// The first batch has Ready set (and Rescan): the watches are in place, and
// whatever changed before they were (between the caller's first scan and
// now) was not seen, so the caller scans everything once more. That is not
// a loss of events and should not be reported as one.
type Batch struct {
	Paths  []string // sorted, relative, slash-separated
	Rescan bool
	Ready  bool
}

// Config configures a Watcher.
type Config struct {
	// Dir is the folder on disk (required).
	Dir string
	// Settle is the quiet time before a path is reported; default
	// DefaultSettle.
	Settle time.Duration
	// Clock; default RealClock.
	Clock Clock
	// Ignored, if set, says which paths not to watch or report (on top of
	// WorkDir and temp files, which are never reported). It is called from
	// the watcher's goroutine.
	Ignored func(path string, isDir bool) bool
	// MaxPending bounds tracked paths; default 10000.
	MaxPending int
	// Logger; default slog.Default().
	Logger *slog.Logger
	// OnUnwatched, if set, is told the roots of the subtrees the watcher
	// could not watch because the system's watch limit is reached (sorted;
	// empty once every directory is watched again), each time that set
	// changes. It is called from the watcher's goroutine. The caller
	// covers those subtrees itself, with rescans.
	OnUnwatched func(roots []string)
	// DeferWalk makes Run add no watch at start and send Ready as soon as
	// watches can be added: the caller's first scan adds them instead,
	// each directory's just before the scan lists it (WatchDir, passed to
	// Scanner.ScanWatching). One walk of the folder then serves both
	// (0.19 s of a start at 100,000 files), and the order keeps the rule
	// that a change is either seen by the scan or reported as an event.
	DeferWalk bool
}

// retryUnwatched is how often the watcher tries again to watch the
// subtrees it could not (watches freed by other programs, or by removed
// directories, make room).
const retryUnwatched = 10 * time.Second

// Watcher watches a folder recursively with fsnotify, adding directories
// as they appear, and reports changed paths once they have settled.
type Watcher struct {
	cfg Config
	out chan Batch
	// lazy is set while Run runs with DeferWalk (WatchDir's state).
	lazy atomic.Pointer[lazyWatches]
}

// lazyWatches is what WatchDir, called from the scan's goroutines, shares
// with the watch loop: the fsnotify watcher (safe for concurrent Add), the
// directories past the watch limit, for the loop to take over, and the
// first other failure, which ends Run.
type lazyWatches struct {
	fw   *fsnotify.Watcher
	wake chan struct{} // capacity 1: limited or fatal holds something

	mu      sync.Mutex
	limited []string
	fatal   error
}

// WatchDir watches directory p (slash-separated, relative; "" is the
// folder) of a DeferWalk watcher, before the caller lists it. It handles
// a failure as a walking watcher's start does: a directory past the
// system's watch limit is left to rescans (OnUnwatched, retried every
// 10 s); any other error ends Run with it, so the caller knows the
// watcher is gone and why. It does nothing before Run has sent Ready or
// after Run returned, and it may be called from any goroutine.
func (w *Watcher) WatchDir(p string) {
	lw := w.lazy.Load()
	if lw == nil {
		return
	}
	err := lw.fw.Add(filepath.Join(w.cfg.Dir, filepath.FromSlash(p)))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return
	}
	lw.mu.Lock()
	if isWatchLimit(err) {
		lw.limited = append(lw.limited, p)
	} else if lw.fatal == nil {
		lw.fatal = fmt.Errorf("watching folder: %q: %w", p, err)
	}
	lw.mu.Unlock()
	select {
	case lw.wake <- struct{}{}:
	default:
	}
}

// takeFailed moves the directories WatchDir found past the watch limit to
// the loop's unwatched set, and returns the error that ends Run, if any.
func (l *watchLoop) takeFailed() error {
	lw := l.lazy
	lw.mu.Lock()
	limited, fatal := lw.limited, lw.fatal
	lw.limited = nil
	lw.mu.Unlock()
	for _, p := range limited {
		l.unwatched[p] = true
	}
	l.told()
	return fatal
}

// NewWatcher returns a Watcher; Run starts it.
func New(cfg Config) (*Watcher, error) {
	if cfg.Dir == "" {
		return nil, errors.New("folder: watcher config needs Dir")
	}
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = defaultMaxPending
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Watcher{cfg: cfg, out: make(chan Batch)}, nil
}

// Batches is the channel of reports. It is closed when Run returns.
func (w *Watcher) Batches() <-chan Batch { return w.out }

// Run watches until ctx is done, then releases the inotify watches and
// returns nil; it returns an error only if watching could not start. The
// caller must keep receiving from Batches (reports merge while it is not:
// nothing blocks the watcher).
func (w *Watcher) Run(ctx context.Context) error {
	defer close(w.out)
	fw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("starting watcher: %w", err)
	}
	defer fw.Close()
	l := &watchLoop{w: w, fw: fw, set: newSettler(w.cfg.Settle), unwatched: map[string]bool{}}
	if w.cfg.DeferWalk {
		l.lazy = &lazyWatches{fw: fw, wake: make(chan struct{}, 1)}
		w.lazy.Store(l.lazy)
		defer w.lazy.Store(nil) // before fw.Close (deferred earlier)
	} else if err := l.addTree("", false); err != nil {
		return fmt.Errorf("watching folder: %w", err)
	}
	l.told()
	l.pending, l.has = Batch{Rescan: true, Ready: true}, true
	return l.run(ctx)
}

type watchLoop struct {
	w       *Watcher
	fw      *fsnotify.Watcher
	lazy    *lazyWatches // with DeferWalk, else nil
	set     *settler
	timer   Timer
	pending Batch // settled, not yet delivered
	has     bool  // pending holds something
	// unwatched is the roots of subtrees not watched because the watch
	// limit was reached; toldUnwatched what OnUnwatched was last told.
	unwatched     map[string]bool
	toldUnwatched []string
}

// isWatchLimit reports whether err from adding a watch means the system's
// limit is reached: inotify's max_user_watches (ENOSPC), or open files
// for watchers that take a descriptor per directory (EMFILE).
func isWatchLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE)
}

// told tells OnUnwatched the current unwatched roots if they changed.
func (l *watchLoop) told() {
	roots := slices.Sorted(maps.Keys(l.unwatched))
	if slices.Equal(roots, l.toldUnwatched) {
		return
	}
	if len(l.toldUnwatched) == 0 {
		l.w.cfg.Logger.Warn("the system's file watch limit is reached: some directories are not watched and are rescanned instead",
			"unwatched", len(roots), "first", roots[0])
	}
	l.toldUnwatched = roots
	if l.w.cfg.OnUnwatched != nil {
		l.w.cfg.OnUnwatched(roots)
	}
}

// retry tries again to watch each unwatched subtree; one that is watched
// now is reported for a scan (changes in it before the watch were not
// seen).
func (l *watchLoop) retry() {
	roots := slices.Sorted(maps.Keys(l.unwatched))
	var back []string
	for _, p := range roots {
		delete(l.unwatched, p)
		if err := l.addTree(p, false); err != nil {
			l.w.cfg.Logger.Warn("watcher: adding directory again", "path", p, "err", err)
			l.unwatched[p] = true
			continue
		}
		if !l.unwatched[p] {
			back = append(back, p)
		}
	}
	l.told()
	l.deliver(back)
}

func (l *watchLoop) run(ctx context.Context) error {
	defer l.stopTimer()
	retry := time.NewTicker(retryUnwatched)
	defer retry.Stop()
	for {
		var out chan<- Batch
		if l.has {
			out = l.w.out
		}
		var tick <-chan time.Time
		if l.timer != nil {
			tick = l.timer.C()
		}
		var failed <-chan struct{}
		if l.lazy != nil {
			failed = l.lazy.wake
		}
		select {
		case <-failed:
			if err := l.takeFailed(); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		case out <- l.pending:
			l.pending, l.has = Batch{}, false
		case ev, ok := <-l.fw.Events:
			if !ok {
				return nil
			}
			l.event(ev)
		case err, ok := <-l.fw.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				l.w.cfg.Logger.Warn("watcher overflow: full rescan")
			} else {
				l.w.cfg.Logger.Warn("watcher error: full rescan", "err", err)
			}
			l.rescan()
		case now := <-tick:
			l.timer = nil
			l.deliver(l.set.due(now))
		case <-retry.C:
			if len(l.unwatched) > 0 {
				l.retry()
			}
		}
		l.arm()
	}
}

// arm keeps a timer running for the earliest pending path.
func (l *watchLoop) arm() {
	if l.timer != nil {
		return
	}
	at, ok := l.set.next()
	if !ok {
		return
	}
	d := at.Sub(l.w.cfg.Clock.Now())
	if d < time.Millisecond {
		d = time.Millisecond
	}
	l.timer = l.w.cfg.Clock.NewTimer(d)
}

func (l *watchLoop) stopTimer() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// deliver merges settled paths into the batch waiting for the caller.
func (l *watchLoop) deliver(paths []string) {
	if len(paths) == 0 {
		return
	}
	if !l.pending.Rescan {
		l.pending.Paths = append(l.pending.Paths, paths...)
		slices.Sort(l.pending.Paths)
		l.pending.Paths = slices.Compact(l.pending.Paths)
	}
	l.has = true
}

// rescan replaces everything pending with a full-rescan request.
func (l *watchLoop) rescan() {
	l.set.clear()
	l.pending, l.has = Batch{Rescan: true}, true
}

// rel converts an fsnotify name to a folder path ("" for the root), or
// false for a path outside the folder.
func (l *watchLoop) rel(name string) (string, bool) {
	r, err := filepath.Rel(l.w.cfg.Dir, name)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

func (l *watchLoop) ignored(p string, isDir bool) bool {
	if folder.IsInternal(p) {
		return true
	}
	return l.w.cfg.Ignored != nil && l.w.cfg.Ignored(p, isDir)
}

func (l *watchLoop) touch(p string) {
	if l.set.len() >= l.w.cfg.MaxPending {
		l.w.cfg.Logger.Warn("watcher: too many pending paths: full rescan")
		l.rescan()
		return
	}
	if l.pending.Rescan {
		return // a full scan is coming anyway
	}
	l.set.touch(p, l.w.cfg.Clock.Now())
}

func (l *watchLoop) event(ev fsnotify.Event) {
	p, ok := l.rel(ev.Name)
	if !ok || p == "" {
		return
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := lstatOS(ev.Name); err == nil && fi.IsDir() {
			if l.ignored(p, true) {
				return
			}
			// Watch the new directory and report what was created in it
			// before the watch existed.
			if err := l.addTree(p, true); err != nil {
				l.w.cfg.Logger.Warn("watcher: adding directory: full rescan", "path", p, "err", err)
				l.rescan()
			}
			l.told()
			return
		}
	}
	if l.ignored(p, false) {
		return
	}
	l.touch(p)
}

// addTree watches directory p and every directory below it, without
// following symlinks, and, if report is set, touches every path found.
func (l *watchLoop) addTree(p string, report bool) error {
	root := filepath.Join(l.w.cfg.Dir, filepath.FromSlash(p))
	return filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err == nil && !report && !d.IsDir() {
			return nil // only directories are watched (at 100,000 files, 0.07 s of a start)
		}
		rp, ok := l.rel(name)
		if !ok {
			return filepath.SkipDir
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile; its removal event follows
			}
			return err
		}
		if rp != "" && l.ignored(rp, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if rp != "" && report {
			l.touch(rp)
		}
		if d.IsDir() {
			if err := l.fw.Add(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				if !isWatchLimit(err) {
					return err
				}
				// Out of watches: this subtree is left to the caller's
				// rescans (OnUnwatched), the rest is watched as usual.
				l.unwatched[rp] = true
				return filepath.SkipDir
			}
		}
		return nil
	})
}
