package pack

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

// hookLog records what Config.OnQuarantine was told.
type hookLog struct {
	mu   sync.Mutex
	got  []cid.Cid
	by   []FoundBy
	also func([]cid.Cid) // run inside the hook: proves it may use the store
}

func (h *hookLog) hook(cs []cid.Cid, by FoundBy) {
	if h.also != nil {
		h.also(cs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cs {
		h.got = append(h.got, c)
		h.by = append(h.by, by)
	}
}

func (h *hookLog) sorted() []cid.Cid {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.got)
	slices.SortFunc(out, func(a, b cid.Cid) int { return compareBytes(a.Bytes(), b.Bytes()) })
	return out
}

// TestQuarantineByRead: a Get that finds a chunk's bytes bad quarantines
// it at once: Has and Get stop reporting it, the hook hears of it once,
// and a Put of the same CID stores it again.
func TestQuarantineByRead(t *testing.T) {
	h := &hookLog{}
	s := openStore(t, Config{Dir: t.TempDir(), OnQuarantine: h.hook})
	defer s.Close()
	want := fill(t, s, 41, 30)
	bad := corruptSome(t, s, want, 1)[0]

	if _, err := s.Get(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get of a corrupt chunk: got %v, want ErrCorrupt", err)
	}
	if ok, err := s.Has(bad); err != nil || ok {
		t.Errorf("Has after the read found it corrupt: got %v, %v; want false, nil", ok, err)
	}
	if _, err := s.Get(bad); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Get: got %v, want ErrNotFound", err)
	}
	if got := h.sorted(); !slices.Equal(got, []cid.Cid{bad}) || h.by[0] != FoundByRead {
		t.Errorf("hook told %v by %v, want [%s] by read", got, h.by, bad)
	}
	if got := s.Stats().Corrupt; got != 1 {
		t.Errorf("Stats().Corrupt: got %d, want 1", got)
	}
	// A scrub finds nothing more: the bad record is out of the index.
	res, err := s.ScrubPass(context.Background(), 0)
	if err != nil || len(res.Corrupt) != 0 || res.Checked != len(want)-1 {
		t.Errorf("scrub after quarantine: got %d checked, corrupt %v, %v; want %d, none, nil", res.Checked, res.Corrupt, err, len(want)-1)
	}

	if err := s.Put(bad, want[bad]); err != nil {
		t.Fatalf("Put after quarantine: %v", err)
	}
	mustHaveAll(t, s, want)
	mustVerify(t, s)
	if n := len(h.sorted()); n != 1 {
		t.Errorf("hook told of %d chunks, want 1", n)
	}
}

// TestQuarantineByScrub: a scrub step quarantines what it finds bad, the
// hook may use the store (here it puts the good bytes back at once, as a
// relay fetching from a device would), and the counters add up.
func TestQuarantineByScrub(t *testing.T) {
	h := &hookLog{}
	dir := t.TempDir()
	var s *Store
	var want map[cid.Cid][]byte
	h.also = func(cs []cid.Cid) {
		for _, c := range cs {
			if ok, err := s.Has(c); err != nil || ok {
				t.Errorf("Has(%s) inside the hook: got %v, %v; want false, nil", c, ok, err)
			}
		}
	}
	s = openStore(t, Config{Dir: dir, OnQuarantine: h.hook})
	defer s.Close()
	want = fill(t, s, 43, 50)
	bad := corruptSome(t, s, want, 4)
	var stored int64
	for c := range want {
		l, _ := s.lookup(c.Bytes())
		stored += l.length
	}

	res, err := s.ScrubPass(context.Background(), 32<<10)
	if err != nil || !res.PassDone {
		t.Fatalf("ScrubPass: got done %v, %v", res.PassDone, err)
	}
	slices.SortFunc(res.Corrupt, func(a, b cid.Cid) int { return compareBytes(a.Bytes(), b.Bytes()) })
	if !slices.Equal(res.Corrupt, bad) || !slices.Equal(h.sorted(), bad) {
		t.Fatalf("got corrupt %v, hook %v; want %v", res.Corrupt, h.sorted(), bad)
	}
	for _, by := range h.by {
		if by != FoundByScrub {
			t.Errorf("found by %q, want scrub", by)
		}
	}
	st := s.Stats()
	if st.Corrupt != uint64(len(bad)) || st.ScrubChunks != uint64(len(want)) || int64(st.ScrubBytes) != stored {
		t.Errorf("Stats: Corrupt %d, ScrubChunks %d, ScrubBytes %d; want %d, %d, %d",
			st.Corrupt, st.ScrubChunks, st.ScrubBytes, len(bad), len(want), stored)
	}
	if st.Chunks != int64(len(want)-len(bad)) {
		t.Errorf("Stats().Chunks: got %d, want %d", st.Chunks, len(want)-len(bad))
	}
	for _, c := range bad {
		if _, err := s.Get(c); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s) after quarantine: got %v, want ErrNotFound", c, err)
		}
		if err := s.Put(c, want[c]); err != nil {
			t.Fatalf("Put after quarantine: %v", err)
		}
	}
	mustHaveAll(t, s, want)
	mustVerify(t, s)

	// The quarantine is durable and an index rebuild does not bring the
	// bad records back: reopen with the index gone.
	s.Close()
	removeIndex(t, dir)
	s = openStore(t, Config{Dir: dir})
	mustHaveAll(t, s, want)
	if res, err := s.ScrubPass(context.Background(), 0); err != nil || len(res.Corrupt) != 0 {
		t.Errorf("scrub after rebuild: corrupt %v, %v; want none", res.Corrupt, err)
	}
}

// TestQuarantineByGC: GC rewriting a pack quarantines the corrupt live
// records it meets instead of copying them.
func TestQuarantineByGC(t *testing.T) {
	h := &hookLog{}
	s := openStore(t, Config{Dir: t.TempDir(), PackSize: 64 << 10, OnQuarantine: h.hook})
	defer s.Close()
	want := fill(t, s, 47, 60)
	// GC rewrites every pack but the one being appended to.
	older := map[cid.Cid][]byte{}
	for c, data := range want {
		if l, err := s.lookup(c.Bytes()); err == nil && l.pack != s.curID {
			older[c] = data
		}
	}
	bad := corruptSome(t, s, older, 2)
	res, err := s.GC(context.Background(), GCOptions{Live: func(yield func(cid.Cid) bool) {
		for c := range want {
			if !yield(c) {
				return
			}
		}
	}, Grace: -1, RewriteThreshold: -1}) // rewrite every pack
	if err != nil {
		t.Fatal(err)
	}
	if res.Corrupt != len(bad) || !slices.Equal(h.sorted(), bad) {
		t.Fatalf("GC quarantined %d, hook %v; want %v", res.Corrupt, h.sorted(), bad)
	}
	for _, by := range h.by {
		if by != FoundByGC {
			t.Errorf("found by %q, want gc", by)
		}
	}
	for _, c := range bad {
		if ok, _ := s.Has(c); ok {
			t.Errorf("%s still in the index after GC found it corrupt", c)
		}
		delete(want, c)
	}
	mustHaveAll(t, s, want)
	mustVerify(t, s)
}

// TestScrubPassFromMidway: a pass asked for while a background pass is
// halfway still verifies every chunk.
func TestScrubPassFromMidway(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	want := fill(t, s, 53, 40)
	if res, err := s.ScrubStep(16 << 10); err != nil || res.PassDone {
		t.Fatalf("first step: done %v, %v", res.PassDone, err)
	}
	res, err := s.ScrubPass(context.Background(), 16<<10)
	if err != nil || !res.PassDone || res.Checked != len(want) {
		t.Errorf("ScrubPass: got %d checked, done %v, %v; want %d, true, nil", res.Checked, res.PassDone, err, len(want))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ScrubPass(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("ScrubPass with a done context: got %v, want context.Canceled", err)
	}
}

func TestScrubPacePause(t *testing.T) {
	week := 7 * 24 * time.Hour
	tests := []struct {
		name        string
		pace        ScrubPace
		worked      time.Duration
		step, total int64
		want        time.Duration
	}{
		// A small store: the step is 1/1000 of the bytes, so it gets
		// 1/1000 of the week, far more than the budget asks.
		{"small store spreads over the week", ScrubPace{}, 10 * time.Millisecond, 1 << 20, 1000 << 20, week/1000 - 10*time.Millisecond},
		// A store too large for the budget: the budget wins.
		{"large store at the budget", ScrubPace{}, time.Second, 16 << 20, 1 << 50, 59 * time.Second},
		{"budget alone", ScrubPace{Budget: Budget{time.Minute, time.Hour}, Period: -1}, time.Second, 1, 1, 59 * time.Second},
		{"nothing read rests a budget period", ScrubPace{}, time.Millisecond, 0, 1 << 30, time.Hour},
		{"empty store rests a budget period", ScrubPace{}, time.Millisecond, 10, 0, time.Hour},
		{"step larger than the store", ScrubPace{Period: time.Hour, Budget: Budget{time.Hour, time.Hour}}, time.Minute, 100, 10, 59 * time.Minute},
		{"long period saturates", ScrubPace{Period: time.Duration(math.MaxInt64), Budget: Budget{time.Hour, time.Hour}}, -time.Hour, 1, 1, time.Duration(math.MaxInt64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pace.Pause(tt.worked, tt.step, tt.total); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestScrubPaceSpreadsPass: Scrub at the default period over a small store
// rests so that reading the whole store takes about a week of clock time,
// not the budget's minute per hour.
func TestScrubPaceSpreadsPass(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	fill(t, s, 59, 40)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{now: time.Unix(0, 0), step: time.Millisecond, stop: cancel, limit: 100}
	_ = s.Scrub(ctx, ScrubConfig{StepBytes: 16 << 10, Clock: clock})
	var slept time.Duration
	for _, p := range clock.pauses {
		slept += p
	}
	st := s.Stats()
	// Each step took 1 ms of clock time (Now advances 1 ms per call).
	worked := time.Duration(len(clock.pauses)) * time.Millisecond
	want := time.Duration(float64(DefaultScrubPeriod)*float64(st.ScrubBytes)/float64(st.BytesStored)) - worked
	if d := slept - want; d < -want/100 || d > want/100 {
		t.Errorf("rested %v over %d steps reading %d of %d bytes, want %v (a pass a week)", slept, len(clock.pauses), st.ScrubBytes, st.BytesStored, want)
	}
}

func removeIndex(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
}

// TestGCBefore: an error from GCOptions.Before aborts the run with nothing
// dropped; Stats().Quarantined counts what the hook was told.
func TestGCBefore(t *testing.T) {
	h := &hookLog{}
	s := openStore(t, Config{Dir: t.TempDir(), OnQuarantine: h.hook})
	defer s.Close()
	want := fill(t, s, 61, 20)
	stop := errors.New("plan is stale")
	res, err := s.GC(context.Background(), GCOptions{Live: func(func(cid.Cid) bool) {}, Grace: -1, AllowEmptyLiveSet: true,
		Before: func() error { return stop }})
	if !errors.Is(err, stop) || res.Dropped != 0 {
		t.Fatalf("GC with a failing Before: got %d dropped, %v; want 0, %v", res.Dropped, err, stop)
	}
	mustHaveAll(t, s, want)
	bad := corruptSome(t, s, want, 2)
	if _, err := s.ScrubPass(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Quarantined; got != uint64(len(bad)) || len(h.sorted()) != len(bad) {
		t.Errorf("Stats().Quarantined %d, hook told of %d; want %d", got, len(h.sorted()), len(bad))
	}
}
