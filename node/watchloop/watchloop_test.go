package watchloop

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/node/folderguard"
	"github.com/weftsync/weft/protocol/engine"
)

// scanned is one Scan the loop asked for.
type scanned struct {
	paths []string
	mode  engine.ScanMode
}

// fakeVault hands every scan and kick the loop asks for to the test.
type fakeVault struct {
	dir    string
	guard  *folderguard.Guard
	scans  chan scanned
	mu     sync.Mutex
	states []error // what Watcher was told, in order
}

func newFake(dir string) *fakeVault {
	return &fakeVault{dir: dir, guard: folderguard.New(), scans: make(chan scanned, 64)}
}

func (v *fakeVault) Folder() string                     { return v.dir }
func (v *fakeVault) Log() *slog.Logger                  { return slog.New(slog.DiscardHandler) }
func (v *fakeVault) Ignored(string, bool) bool          { return false }
func (v *fakeVault) Unwatched([]string)                 {}
func (v *fakeVault) WatcherRescan()                     {}
func (v *fakeVault) FolderGuard() *folderguard.Guard    { return v.guard }
func (v *fakeVault) CheckFolder()                       {}
func (v *fakeVault) FallbackScan(context.Context) error { return nil }
func (v *fakeVault) RetryHome() bool                    { return false }
func (v *fakeVault) DeferredDeletions() []string        { return nil }
func (v *fakeVault) Scan(ctx context.Context, paths []string, mode engine.ScanMode) error {
	select {
	case v.scans <- scanned{paths, mode}:
	case <-ctx.Done(): // the test has read what it needed
	}
	return nil
}

func (v *fakeVault) Watcher(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.states = append(v.states, err)
}

// Kick is handed to the test among the scans, in order.
func (v *fakeVault) Kick() { v.scans <- scanned{mode: kick} }

// kick marks a Kick among the scans.
const kick engine.ScanMode = -1

// next waits for the next scan (a bound on a hang, not a wait for time to
// pass).
func (v *fakeVault) next(t *testing.T) scanned {
	t.Helper()
	select {
	case s := <-v.scans:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("no scan was asked for")
		return scanned{}
	}
}

// start runs the loop until the test ends; first is the first scan's
// stand-in, told whether the watcher is ready for it to add watches.
func start(t *testing.T, v *fakeVault, cfg Config) <-chan bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	firstWatching := make(chan bool, 1)
	go func() {
		defer close(done)
		Run(ctx, v, cfg, func(watchDir func(string)) bool {
			if watchDir != nil {
				watchDir("") // the root, as the scan's walk does first
			}
			firstWatching <- watchDir != nil
			return true
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return firstWatching
}

// With a watcher, the first scan runs once its watches can be added, and
// a file written after it is scanned as the watcher reports it.
func TestRunScansWhatTheWatcherReports(t *testing.T) {
	dir := t.TempDir()
	v := newFake(dir)
	first := start(t, v, Config{Watcher: true, Settle: 10 * time.Millisecond, RescanEvery: time.Hour})
	if !<-first {
		t.Fatal("the first scan ran without the watcher's WatchDir")
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := v.next(t)
	if !slices.Equal(s.paths, []string{"a.txt"}) || s.mode != engine.ScanWatched {
		t.Fatalf("scan %+v, want a.txt as the watcher reported it", s)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.states) != 1 || v.states[0] != nil {
		t.Errorf("watcher states %v, want one running", v.states)
	}
}

// Without a watcher the whole folder is rescanned every RescanEvery.
func TestRunWithoutWatcherRescans(t *testing.T) {
	v := newFake(t.TempDir())
	first := start(t, v, Config{Watcher: false, RescanEvery: 5 * time.Millisecond})
	if <-first {
		t.Fatal("the first scan was given a WatchDir with no watcher")
	}
	for range 2 {
		if s := v.next(t); s.paths != nil || s.mode != engine.ScanFull {
			t.Fatalf("scan %+v, want the whole folder", s)
		}
	}
}

// A stopped folder that passes its check again is scanned whole, a pass
// is asked for, and a new watcher watches it.
func TestRunScansAgainWhenTheFolderResumes(t *testing.T) {
	dir := t.TempDir()
	v := newFake(dir)
	first := start(t, v, Config{Watcher: true, Settle: 10 * time.Millisecond, RescanEvery: time.Hour})
	<-first
	now := time.Unix(1e9, 0)
	v.guard.Note("marker-missing", "the folder's marker is gone", now)
	if change, _ := v.guard.Note("", "", now.Add(time.Second)); change != folderguard.Resumed {
		t.Fatalf("the guard said %v, want Resumed", change)
	}
	if s := v.next(t); s.paths != nil || s.mode != engine.ScanFull {
		t.Fatalf("scan %+v, want the whole folder after the resume", s)
	}
	if s := v.next(t); s.mode != kick {
		t.Fatalf("%+v, want a pass asked for after the resume's scan", s)
	}
	// The new watcher's first batch says its watches are in place, and
	// asks for a full scan; then it reports changes.
	if s := v.next(t); s.paths != nil || s.mode != engine.ScanFull {
		t.Fatalf("scan %+v, want the new watcher's full scan", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := v.next(t); !slices.Equal(s.paths, []string{"b.txt"}) || s.mode != engine.ScanWatched {
		t.Fatalf("scan %+v, want b.txt as the new watcher reported it", s)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.states) != 2 || v.states[0] != nil || v.states[1] != nil {
		t.Errorf("watcher states %v, want two running", v.states)
	}
}
