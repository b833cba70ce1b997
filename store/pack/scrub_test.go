package pack

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

func TestBudgetPause(t *testing.T) {
	tests := []struct {
		name   string
		budget Budget
		worked time.Duration
		want   time.Duration
	}{
		{"a minute per hour", Budget{time.Minute, time.Hour}, time.Second, 59 * time.Second},
		{"half the time", Budget{time.Second, 2 * time.Second}, 300 * time.Millisecond, 300 * time.Millisecond},
		{"no work done", Budget{time.Minute, time.Hour}, 0, 0},
		{"unlimited", Budget{time.Hour, time.Hour}, time.Second, 0},
		{"no budget", Budget{0, time.Hour}, time.Second, time.Hour},
		{"long step saturates", Budget{time.Millisecond, 24 * time.Hour}, time.Hour, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.budget.Pause(tt.worked); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// corruptSome flips a data byte in the records of n chunks of want (none
// the last record of its pack) and returns their CIDs, sorted by key.
func corruptSome(t *testing.T, s *Store, want map[cid.Cid][]byte, n int) []cid.Cid {
	var bad []cid.Cid
	for c := range want {
		if len(bad) == n {
			break
		}
		l, err := s.lookup(c.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if l.off+l.length == s.Stats().BytesOnDisk || l.off+l.length == s.packSizes[l.pack] {
			// Damage at the very end of a pack looks like a torn tail
			// to Verify's scan; keep the test about the scrub.
			continue
		}
		flipByte(t, s.packPath(l.pack), l.off+l.length-1)
		bad = append(bad, c)
	}
	slices.SortFunc(bad, func(a, b cid.Cid) int { return compareBytes(a.Bytes(), b.Bytes()) })
	return bad
}

func compareBytes(a, b []byte) int { return slices.Compare(a, b) }

func TestScrubStep(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Now: func() time.Time { return now }}
	s := openStore(t, cfg)
	want := fill(t, s, 31, 60)
	bad := corruptSome(t, s, want, 3)
	if _, ok, _ := s.LastScrub(); ok {
		t.Fatalf("LastScrub before any pass: got ok")
	}
	var found []cid.Cid
	checked := 0
	var corruptBefore uint64 // Stats counts since Open
	for step := 0; ; step++ {
		if step == 2 {
			// The cursor survives a restart.
			corruptBefore = s.Stats().Corrupt
			s.Close()
			s = openStore(t, cfg)
		}
		res, err := s.ScrubStep(64 << 10)
		if err != nil {
			t.Fatal(err)
		}
		checked += res.Checked
		found = append(found, res.Corrupt...)
		if res.PassDone {
			break
		}
		if step > 1000 {
			t.Fatal("scrub pass never ends")
		}
	}
	defer s.Close()
	if checked != len(want) {
		t.Errorf("a pass checked %d chunks, want %d", checked, len(want))
	}
	slices.SortFunc(found, func(a, b cid.Cid) int { return compareBytes(a.Bytes(), b.Bytes()) })
	if !slices.Equal(found, bad) {
		t.Errorf("got corrupt %v, want %v", found, bad)
	}
	for _, c := range bad {
		if ok, _ := s.Has(c); ok {
			t.Errorf("corrupt chunk %s is still in the index", c)
		}
		delete(want, c)
	}
	if got := corruptBefore + s.Stats().Corrupt; got != uint64(len(bad)) {
		t.Errorf("got Stats().Corrupt %d, want %d", got, len(bad))
	}
	last, ok, err := s.LastScrub()
	if err != nil || !ok || !last.Equal(now) {
		t.Errorf("LastScrub: got %v, %v, %v; want %v, true, nil", last, ok, err, now)
	}
	mustHaveAll(t, s, want)
	mustVerify(t, s)
}

// fakeClock advances by step at each Now and records the pauses asked of
// After, which fire at once.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	step   time.Duration
	pauses []time.Duration
	stop   func()
	limit  int
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pauses = append(c.pauses, d)
	if len(c.pauses) >= c.limit {
		c.stop()
	}
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func TestScrubPacing(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	want := fill(t, s, 32, 40)
	bad := corruptSome(t, s, want, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{now: time.Unix(0, 0), step: 10 * time.Millisecond, stop: cancel, limit: 50}
	var reported []cid.Cid
	err := s.Scrub(ctx, ScrubConfig{
		Budget:    Budget{Work: time.Minute, Per: time.Hour},
		Period:    -1, // the budget alone
		StepBytes: 32 << 10,
		Clock:     clock,
		OnCorrupt: func(c cid.Cid) { reported = append(reported, c) },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scrub: got %v, want context.Canceled", err)
	}
	// Each step "takes" 10 ms of fake time, so each pause is 59 times that.
	for i, p := range clock.pauses {
		if p != 590*time.Millisecond {
			t.Fatalf("pause %d: got %v, want 590ms", i, p)
		}
	}
	slices.SortFunc(reported, func(a, b cid.Cid) int { return compareBytes(a.Bytes(), b.Bytes()) })
	if !slices.Equal(reported, bad) {
		t.Errorf("got reported %v, want %v", reported, bad)
	}
	if _, ok, _ := s.LastScrub(); !ok {
		t.Errorf("no full pass recorded")
	}
}

func TestScrubEmptyStoreRests(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{now: time.Unix(0, 0), stop: cancel, limit: 3}
	s.Scrub(ctx, ScrubConfig{Budget: Budget{Work: time.Minute, Per: time.Hour}, Clock: clock})
	for i, p := range clock.pauses {
		if p != time.Hour {
			t.Errorf("pause %d on an empty store: got %v, want 1h", i, p)
		}
	}
}
