package watch

import (
	"slices"
	"time"
)

// settler tracks paths that changed and releases each one once it has been
// quiet for the settle delay. It is pure (time comes in as arguments) and
// not safe for concurrent use.
type settler struct {
	delay time.Duration
	last  map[string]time.Time // path -> time of its latest event
}

func newSettler(delay time.Duration) *settler {
	return &settler{delay: delay, last: map[string]time.Time{}}
}

// touch records an event on p at now.
func (s *settler) touch(p string, now time.Time) { s.last[p] = now }

// len returns the number of pending paths.
func (s *settler) len() int { return len(s.last) }

// clear forgets every pending path.
func (s *settler) clear() { clear(s.last) }

// due removes and returns, sorted, the paths quiet since at least delay
// before now.
func (s *settler) due(now time.Time) []string {
	var out []string
	for p, t := range s.last {
		if now.Sub(t) >= s.delay {
			out = append(out, p)
			delete(s.last, p)
		}
	}
	slices.Sort(out)
	return out
}

// next returns when the earliest pending path becomes due, or false if
// none is pending.
func (s *settler) next() (time.Time, bool) {
	var first time.Time
	ok := false
	for _, t := range s.last {
		if !ok || t.Before(first) {
			first, ok = t, true
		}
	}
	return first.Add(s.delay), ok
}
