package pullset

import (
	"context"
	"sync"
	"testing"
	"time"
)

// owner runs the pullers' goroutines, as node's Run does, and waits for
// them at the end.
type owner struct {
	ctx     context.Context
	wg      sync.WaitGroup
	stopped bool
}

func (o *owner) spawn(f func(context.Context)) bool {
	if o.stopped {
		return false
	}
	o.wg.Go(func() { f(o.ctx) })
	return true
}

// within fails the test if ch does not receive in time (a bound on a
// hang, not a wait for time to pass).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// A second Start for a key whose puller runs wakes it instead of starting
// another; a wake that comes as the puller gives up makes it run again;
// a puller that ends unwoken frees its key.
func TestStartOnePerKeyAndRunAgainWhenWoken(t *testing.T) {
	o := &owner{ctx: context.Background()}
	var s Set[string]
	runs := make(chan (<-chan struct{})) // each run hands the test its kick
	release := make(chan struct{})       // and returns when the test says
	run := func(_ context.Context, kick <-chan struct{}) {
		runs <- kick
		<-release
	}
	if !s.Start("a", o.spawn, run) {
		t.Fatal("the first Start says it started nothing")
	}
	kick := within(t, runs, "first run")
	if s.Ensure("a", o.spawn, run) {
		t.Fatal("Ensure started a second puller")
	}
	select {
	case <-kick:
		t.Fatal("Ensure woke the running puller")
	default:
	}
	if s.Start("a", o.spawn, run) { // the peer connected again meanwhile
		t.Fatal("a second Start says it started a puller")
	}
	within(t, kick, "wake of the running puller")
	s.Start("a", o.spawn, run) // and again, as the run gives up
	release <- struct{}{}
	within(t, runs, "run again after the wake")
	if !s.Running("a") {
		t.Fatal("key a freed while its puller runs")
	}
	release <- struct{}{}
	o.wg.Wait()
	if s.Running("a") {
		t.Fatal("key a still held after its puller ended unwoken")
	}
	s.Start("a", o.spawn, run)
	within(t, runs, "a new puller once the key was free")
	release <- struct{}{}
	o.wg.Wait()
}

// Kick wakes the pullers whose key matches, and only those.
func TestKickMatches(t *testing.T) {
	o := &owner{ctx: context.Background()}
	var s Set[string]
	kicks := map[string]<-chan struct{}{}
	var mu sync.Mutex
	started := make(chan string)
	release := make(chan struct{})
	for _, k := range []string{"a", "b"} {
		s.Start(k, o.spawn, func(_ context.Context, kick <-chan struct{}) {
			mu.Lock()
			kicks[k] = kick
			mu.Unlock()
			started <- k
			<-release
		})
	}
	within(t, started, "a start")
	within(t, started, "b start")
	s.Kick(func(k string) bool { return k == "b" })
	mu.Lock()
	a, b := kicks["a"], kicks["b"]
	mu.Unlock()
	within(t, b, "b's wake")
	select {
	case <-a:
		t.Fatal("a woken by a kick for b")
	default:
	}
	close(release)
	o.wg.Wait()
}

// A puller whose owner has stopped is not started, and a wake that comes
// after the owner's context ended does not run it again.
func TestStopping(t *testing.T) {
	o := &owner{ctx: context.Background(), stopped: true}
	var s Set[string]
	s.Start("a", o.spawn, func(context.Context, <-chan struct{}) { t.Error("ran while the owner stopped") })
	if s.Running("a") {
		t.Fatal("key held with no puller started")
	}

	ctx, cancel := context.WithCancel(context.Background())
	o = &owner{ctx: ctx}
	runs := make(chan struct{}, 2)
	release := make(chan struct{})
	s.Start("a", o.spawn, func(context.Context, <-chan struct{}) {
		runs <- struct{}{}
		<-release
	})
	within(t, runs, "run")
	s.Start("a", o.spawn, nil) // a wake while it runs
	cancel()
	close(release)
	o.wg.Wait()
	if len(runs) != 0 || s.Running("a") {
		t.Fatalf("ran again after the owner's context ended (%d more runs), or the key is held", len(runs))
	}
}

// Wait doubles the backoff up to its limit, and a wake resets it.
func TestWaitBackoff(t *testing.T) {
	ctx := context.Background()
	kick := make(chan struct{}, 1)
	b := time.Millisecond
	for _, want := range []time.Duration{2, 4, 4} {
		if !Wait(ctx, kick, &b, 4*time.Millisecond) || b != want*time.Millisecond {
			t.Fatalf("backoff %v, want %v", b, want*time.Millisecond)
		}
	}
	kick <- struct{}{}
	b = time.Hour
	if !Wait(ctx, kick, &b, 2*time.Hour) || b != FirstBackoff {
		t.Fatalf("after a wake: backoff %v, want %v", b, FirstBackoff)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if Wait(done, kick, &b, time.Hour) {
		t.Fatal("Wait went on after its context ended")
	}
}
