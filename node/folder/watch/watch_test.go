package watch

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/weftsync/weft/node/folder"
)

func TestSettler(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	s := newSettler(100 * time.Millisecond)
	s.touch("a", ms(0))
	s.touch("b", ms(50))
	if got := s.due(ms(99)); len(got) != 0 {
		t.Errorf("due at 99ms = %q, want none", got)
	}
	s.touch("a", ms(90)) // still being written
	if at, _ := s.next(); !at.Equal(ms(150)) {
		t.Errorf("next = %v, want 150ms", at.Sub(t0))
	}
	if got := s.due(ms(150)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("due at 150ms = %q, want [b]", got)
	}
	if got := s.due(ms(190)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("due at 190ms = %q, want [a]", got)
	}
	if _, ok := s.next(); ok {
		t.Errorf("next with nothing pending reported a time")
	}
}

// fakeClock is a Clock driven by the test.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	made   chan struct{}
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1000, 0), made: make(chan struct{}, 100)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{at: f.now.Add(d), c: make(chan time.Time, 1)}
	f.timers = append(f.timers, t)
	f.made <- struct{}{}
	return t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.timers[:0]
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.c <- f.now
		} else {
			kept = append(kept, t)
		}
	}
	f.timers = kept
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool          { return true }

// TestWatchLoopDeterministic drives the watcher's loop with a fake
// fsnotify and a fake clock: a path is reported once it has settled, and
// an overflow turns into a full-rescan request.
func TestWatchLoopDeterministic(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	w, err := New(Config{Dir: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	events, errs := make(chan fsnotify.Event), make(chan error)
	l := &watchLoop{w: w, fw: &fsnotify.Watcher{Events: events, Errors: errs}, set: newSettler(w.cfg.Settle)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.run(ctx) }()

	events <- fsnotify.Event{Name: filepath.Join(dir, "a.txt"), Op: fsnotify.Write}
	events <- fsnotify.Event{Name: filepath.Join(dir, ".weft", "db"), Op: fsnotify.Write}
	events <- fsnotify.Event{Name: filepath.Join(dir, "d", folder.TempPrefix+"1"), Op: fsnotify.Write}
	<-clk.made
	clk.advance(99 * time.Millisecond)
	events <- fsnotify.Event{Name: filepath.Join(dir, "b.txt"), Op: fsnotify.Write}
	clk.advance(1 * time.Millisecond) // a.txt is due
	if b := <-w.Batches(); b.Rescan || !slices.Equal(b.Paths, []string{"a.txt"}) {
		t.Errorf("first batch = %+v, want [a.txt]", b)
	}
	<-clk.made
	clk.advance(100 * time.Millisecond)
	if b := <-w.Batches(); !slices.Equal(b.Paths, []string{"b.txt"}) {
		t.Errorf("second batch = %+v, want [b.txt]", b)
	}
	errs <- fsnotify.ErrEventOverflow
	if b := <-w.Batches(); !b.Rescan {
		t.Errorf("after overflow = %+v, want a rescan request", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run = %v", err)
	}
}

// waitFor receives batches until want holds, failing after a generous
// bound.
func waitFor(t *testing.T, w *Watcher, want func(seen map[string]bool) bool) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for !want(seen) {
		select {
		case b, ok := <-w.Batches():
			if !ok {
				t.Fatal("watcher stopped")
			}
			for _, p := range b.Paths {
				seen[p] = true
			}
		case <-deadline:
			t.Fatalf("timed out; saw %v", seen)
		}
	}
	return seen
}

// TestWatcherReal runs the real fsnotify watcher: files, new directories
// (and what is created in them before and after the watch is added), and
// a clean stop with no goroutine left behind.
func TestWatcherReal(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "existing"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".weft"), 0o755)
	w, err := New(Config{Dir: dir, Settle: 20 * time.Millisecond,
		Ignored: func(p string, isDir bool) bool { return filepath.Ext(p) == ".log" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	// The watch on existing directories is in place once an event in one
	// arrives; keep touching until it does.
	probe := filepath.Join(dir, "existing", "probe")
	seen := map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for !seen["existing/probe"] {
		if time.Now().After(deadline) {
			t.Fatal("watcher never reported existing/probe")
		}
		os.WriteFile(probe, []byte("x"), 0o644)
		select {
		case b := <-w.Batches():
			for _, p := range b.Paths {
				seen[p] = true
			}
		case <-time.After(200 * time.Millisecond):
		}
	}

	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "x.log"), []byte("ignored"), 0o644)
	os.WriteFile(filepath.Join(dir, ".weft", "db"), []byte("internal"), 0o644)
	os.MkdirAll(filepath.Join(dir, "new", "deep"), 0o755)
	os.WriteFile(filepath.Join(dir, "new", "deep", "early.txt"), []byte("e"), 0o644)
	seen = waitFor(t, w, func(s map[string]bool) bool { return s["a.txt"] && s["new/deep/early.txt"] })
	// The new directory is watched now: a later file in it is reported.
	os.WriteFile(filepath.Join(dir, "new", "deep", "later.txt"), []byte("l"), 0o644)
	more := waitFor(t, w, func(s map[string]bool) bool { return s["new/deep/later.txt"] })
	for p := range more {
		seen[p] = true
	}
	for _, p := range []string{"x.log", ".weft/db", ".weft"} {
		if seen[p] {
			t.Errorf("reported %s, which must never be", p)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if _, ok := <-w.Batches(); ok {
		t.Error("Batches not closed after Run returned")
	}
	deadline = time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, want <= %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWatcherFirstBatchIsReady: the first report says the watches are in
// place and asks for one full scan, so a change made between the caller's
// first scan and the watches being added is not missed.
func TestWatcherFirstBatchIsReady(t *testing.T) {
	dir := t.TempDir()
	w, err := New(Config{Dir: dir, Settle: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if b := firstBatch(t, w); !b.Ready || !b.Rescan || len(b.Paths) != 0 {
		t.Errorf("first batch %+v, want Ready and Rescan with no paths", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestWatcherDeferWalk: a DeferWalk watcher is ready at once and watches
// what the caller's scan lists (ScanWatching with WatchDir): every
// directory the scan enters, never the internal one, and a change in a
// directory added that way is reported.
func TestWatcherDeferWalk(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b/c", ".weft"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "b/c/old.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Dir: dir, Settle: 20 * time.Millisecond, DeferWalk: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if b := firstBatch(t, w); !b.Ready {
		t.Fatalf("first batch %+v, want Ready", b)
	}

	fsys, err := folder.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := folder.NewScanner(folder.ScannerConfig{FS: fsys, Index: folder.MapIndex{}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var watched []string
	res, err := sc.ScanWatching(ctx, func(d string) {
		mu.Lock()
		watched = append(watched, d)
		mu.Unlock()
		w.WatchDir(d)
	})
	if err != nil || res.Files != 1 {
		t.Fatalf("scan: %d files, %v; want 1 file", res.Files, err)
	}
	slices.Sort(watched)
	if want := []string{"", "a", "b", "b/c"}; !slices.Equal(watched, want) {
		t.Errorf("watched %q, want %q", watched, want)
	}

	if err := os.WriteFile(filepath.Join(dir, "b/c/new.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, func(seen map[string]bool) bool { return seen["b/c/new.txt"] })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	w.WatchDir("a") // after Run: does nothing
}

// firstBatch receives w's first batch, failing after a generous bound.
func firstBatch(t *testing.T, w *Watcher) Batch {
	t.Helper()
	select {
	case b := <-w.Batches():
		return b
	case <-time.After(20 * time.Second):
		t.Fatal("no first batch")
	}
	return Batch{}
}

// A directory a DeferWalk watcher cannot watch for a reason other than the
// watch limit ends Run with that error, as a walking watcher's start does,
// so the caller knows the watcher is gone and why (and rescans instead).
func TestWatcherDeferWalkFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Dir: dir, Settle: 20 * time.Millisecond, DeferWalk: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	if b := firstBatch(t, w); !b.Ready {
		t.Fatalf("first batch %+v, want Ready", b)
	}
	w.WatchDir("f/below") // ENOTDIR: f is a file
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "f/below") {
			t.Errorf("Run = %v, want the watch error naming f/below", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run went on after a directory could not be watched")
	}
}
