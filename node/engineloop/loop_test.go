package engineloop

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/engine"
)

// Work runs in the order it was handed over, whether the loop or a caller
// runs it: a read after a post sees it.
func TestEngineLoopKeepsOrder(t *testing.T) {
	l := New(engine.Config{})
	// No loop yet (a vault opening): posts run at once, nothing queued.
	l.Touch("a")
	l.Post(func(e *engine.Engine) { e.Touch("b") })
	l.mu.Lock()
	queued := len(l.queue)
	l.mu.Unlock()
	if queued != 0 {
		t.Fatalf("before the loop: %d pieces of work queued, want them run at once", queued)
	}
	l.Post(func(e *engine.Engine) { e.Step(engine.Current{Paths: []string{"b"}}) })
	var dirty []string
	l.Do(func(e *engine.Engine) { dirty = e.DirtyPaths() })
	if len(dirty) != 1 || dirty[0] != "a" {
		t.Fatalf("before the loop: dirty %v, want [a]", dirty)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { l.Run(ctx); close(stopped) }()
	for i := range 200 {
		p := string(rune('b' + i%20))
		l.Touch(p)
		l.Post(func(e *engine.Engine) { e.Step(engine.Current{Paths: []string{p}}) })
	}
	l.Touch("z")
	l.Do(func(e *engine.Engine) { dirty = e.DirtyPaths() })
	if strings.Join(dirty, ",") != "a,z" {
		t.Errorf("a touch and a Current of the same path, in order: dirty %v, want [a z]", dirty)
	}

	// Many goroutines at once, each a touch then a read of its own path.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := "w" + string(rune('0'+i))
			for range 50 {
				l.Touch(p)
				var ok bool
				l.Do(func(e *engine.Engine) { ok = e.IsDirty(p) })
				if !ok {
					t.Errorf("%s touched, then read as not dirty", p)
					return
				}
				l.Post(func(e *engine.Engine) { e.Step(engine.Current{Paths: []string{p}}) })
				l.Do(func(e *engine.Engine) { ok = e.IsDirty(p) })
				if ok {
					t.Errorf("%s current, then read as dirty", p)
					return
				}
			}
		})
	}
	wg.Wait()

	// Work handed over before the loop stops still runs; after, the caller
	// runs it.
	l.Post(func(e *engine.Engine) { e.Step(engine.Current{Paths: []string{"a"}}) })
	cancel()
	<-stopped
	l.Post(func(e *engine.Engine) { e.Step(engine.Current{Paths: []string{"z"}}) })
	l.Do(func(e *engine.Engine) { dirty = e.DirtyPaths() })
	if slices := strings.Join(dirty, ","); strings.Contains(slices, "a") || strings.Contains(slices, "z") {
		t.Errorf("after the loop stopped: dirty %v, want neither a nor z", dirty)
	}
}

// A do handed over while the loop stops returns: the loop runs what is
// queued on its way out, and a do after that runs the work itself. Without
// the last run, a pass asking for a decision as Run ended never returned
// and Run's wait group never finished.
func TestEngineLoopDoAcrossStopReturns(t *testing.T) {
	for round := range 200 {
		l := New(engine.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { l.Run(ctx); close(stopped) }()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				for range 50 {
					l.Do(func(e *engine.Engine) { e.Touch("p") })
				}
			})
		}
		close(start)
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // a bound on a hang, not a wait for an event
			t.Fatalf("round %d: a do handed over while the loop stopped never returned", round)
		}
		<-stopped
	}
}

// Work handed over from many goroutines, before, during and after the
// loop, runs one piece at a time and all of it: a plain counter that
// every piece changes stays exact (and -race sees every piece ordered).
func TestEngineLoopRunsOneAtATime(t *testing.T) {
	l := New(engine.Config{})
	count, inside := 0, 0
	work := func(*engine.Engine) {
		inside++
		if inside != 1 {
			t.Errorf("%d pieces of work at once", inside)
		}
		count++
		inside--
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				if (i+j)%2 == 0 {
					l.Post(work)
				} else {
					l.Do(work)
				}
			}
		})
		if i == 3 {
			go func() { l.Run(ctx); close(stopped) }()
		}
	}
	wg.Wait()
	cancel()
	<-stopped
	l.Do(func(*engine.Engine) {})
	if count != 800 {
		t.Errorf("%d pieces ran, want 800", count)
	}
}
