package pullset

import (
	"context"
	"sync"
	"time"
)

// Set runs at most one puller per key (node's: a peer and a vault) and
// wakes the one running when asked again. Its methods are safe for
// concurrent use.
type Set[K comparable] struct {
	mu      sync.Mutex
	running map[K]chan struct{} // a running puller's kick (buffer 1)
}

// Start makes sure a puller runs for k: if none does, it starts one on a
// goroutine spawn starts (spawn reports false when it starts none: the
// owner is stopping); if one does, it kicks it. The puller calls run,
// which should end its backoff at once when kick receives; when run
// returns, the puller ends unless it was kicked meanwhile (a connection
// opened as it gave up), in which case it calls run again, while ctx
// lasts. Without that, a reconnect racing the puller's exit found it
// still marked running, started none, and entries stopped flowing from
// that peer until the next reconnect (simulation finding 7). It reports
// whether it started a puller.
func (s *Set[K]) Start(k K, spawn func(func(ctx context.Context)) bool, run func(ctx context.Context, kick <-chan struct{})) bool {
	return s.start(k, spawn, run, true)
}

// Ensure is Start without the wake: a caller that asks again and again (a
// periodic look) starts a puller where none runs and leaves a running one
// in its backoff.
func (s *Set[K]) Ensure(k K, spawn func(func(ctx context.Context)) bool, run func(ctx context.Context, kick <-chan struct{})) bool {
	return s.start(k, spawn, run, false)
}

func (s *Set[K]) start(k K, spawn func(func(ctx context.Context)) bool, run func(ctx context.Context, kick <-chan struct{}), wake bool) bool {
	s.mu.Lock()
	if kick, ok := s.running[k]; ok {
		if wake {
			signal(kick)
		}
		s.mu.Unlock()
		return false
	}
	if s.running == nil {
		s.running = map[K]chan struct{}{}
	}
	kick := make(chan struct{}, 1)
	s.running[k] = kick
	s.mu.Unlock()
	started := spawn(func(ctx context.Context) {
		for {
			run(ctx, kick)
			// Stop only if no kick came since the last look; Start kicks
			// under mu, so none is missed.
			s.mu.Lock()
			select {
			case <-kick:
				if ctx.Err() == nil {
					s.mu.Unlock()
					continue
				}
			default:
			}
			delete(s.running, k)
			s.mu.Unlock()
			return
		}
	})
	if !started {
		s.mu.Lock()
		delete(s.running, k)
		s.mu.Unlock()
	}
	return started
}

// Kick ends the backoff wait of every running puller whose key match
// accepts, so each tries again now.
func (s *Set[K]) Kick(match func(K) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, kick := range s.running {
		if match(k) {
			signal(kick)
		}
	}
}

// Running reports whether a puller runs for k.
func (s *Set[K]) Running(k K) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.running[k]
	return ok
}

func signal(kick chan struct{}) {
	select {
	case kick <- struct{}{}:
	default:
	}
}

// FirstBackoff is where a puller's backoff starts, and starts again after
// a kick.
const FirstBackoff = 200 * time.Millisecond

// Wait waits out a puller's backoff before its next attempt, doubling it
// up to limit; a kick (a new connection to the peer) ends the wait at once
// and resets it to FirstBackoff. It returns false when ctx ends.
func Wait(ctx context.Context, kick <-chan struct{}, backoff *time.Duration, limit time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-kick:
		*backoff = FirstBackoff
	case <-t.C:
		*backoff = min(2*(*backoff), limit)
	}
	return true
}
