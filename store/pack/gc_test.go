package pack

import (
	"context"
	"errors"
	"iter"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

func seqOf(m map[cid.Cid][]byte) iter.Seq[cid.Cid] { return maps.Keys(m) }

// TestGCReclaimsSpace: after half the chunks stop being live, GC drops them
// and rewrites the packs, and the bytes on disk fall.
func TestGCReclaimsSpace(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, PackSize: 256 << 10}
	s := openStore(t, cfg)
	all := fill(t, s, 21, 300)
	// Every other chunk in CID order dies: deterministic for the seed,
	// and about half the bytes.
	live, dead := make(map[cid.Cid][]byte), make(map[cid.Cid][]byte)
	for i, c := range slices.SortedFunc(maps.Keys(all), func(a, b cid.Cid) int { return compareBytes(a.Bytes(), b.Bytes()) }) {
		if i%2 == 0 {
			live[c] = all[c]
		} else {
			dead[c] = all[c]
		}
	}
	before := s.Stats()
	diskBefore := dirSize(t, dir)
	res, err := s.GC(context.Background(), GCOptions{Live: seqOf(live), Grace: -1})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	after := s.Stats()
	t.Logf("GC: %+v; bytes on disk %d -> %d (dir %d -> %d)", res, before.BytesOnDisk, after.BytesOnDisk, diskBefore, dirSize(t, dir))
	if res.Dropped != len(dead) {
		t.Errorf("got %d chunks dropped, want %d", res.Dropped, len(dead))
	}
	if res.PacksRewritten == 0 {
		t.Errorf("got no packs rewritten")
	}
	if after.BytesOnDisk >= before.BytesOnDisk*3/4 {
		t.Errorf("bytes on disk went from %d to %d, want a drop of more than a quarter", before.BytesOnDisk, after.BytesOnDisk)
	}
	if after.Chunks != int64(len(live)) {
		t.Errorf("got %d chunks, want %d", after.Chunks, len(live))
	}
	mustHaveAll(t, s, live)
	for c := range dead {
		if _, err := s.Get(c); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(dead chunk): got %v, want ErrNotFound", err)
		}
	}
	mustVerify(t, s)
	s.Close()
	// The result survives a restart.
	s = openStore(t, cfg)
	defer s.Close()
	mustHaveAll(t, s, live)
	if got := s.Stats().Chunks; got != int64(len(live)) {
		t.Errorf("after reopen: got %d chunks, want %d", got, len(live))
	}
	if got := dirSize(t, dir); got >= diskBefore*3/4 {
		t.Errorf("after reopen: %d bytes in the store directory, want well below %d", got, diskBefore)
	}
	mustVerify(t, s)
}

func TestGCRefusesEmptyLiveSet(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	all := fill(t, s, 22, 20)
	none := seqOf(nil)
	if _, err := s.GC(context.Background(), GCOptions{Live: none, Grace: -1}); !errors.Is(err, ErrEmptyLiveSet) {
		t.Fatalf("GC with an empty live set: got %v, want ErrEmptyLiveSet", err)
	}
	mustHaveAll(t, s, all)
	res, err := s.GC(context.Background(), GCOptions{Live: none, Grace: -1, AllowEmptyLiveSet: true})
	if err != nil || res.Dropped != len(all) {
		t.Fatalf("GC allowed an empty live set: got %d dropped, %v; want %d, nil", res.Dropped, err, len(all))
	}
	// An empty store with an empty live set is fine.
	if _, err := s.GC(context.Background(), GCOptions{Live: none, Grace: -1}); err != nil {
		t.Fatalf("GC of an empty store: %v", err)
	}
}

// TestGCGrace: a chunk nobody references yet is kept for the grace period
// (its entry may still be on its way), and a Put of an old chunk renews it.
func TestGCGrace(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := openStore(t, Config{Dir: t.TempDir(), Now: clock})
	defer s.Close()
	old := fill(t, s, 23, 10)
	advance(2 * time.Hour)
	fresh := fill(t, s, 24, 10)
	var renewed cid.Cid
	for c, d := range old {
		renewed = c
		if err := s.Put(c, d); err != nil {
			t.Fatal(err)
		}
		break
	}
	keep := map[cid.Cid][]byte{}
	for c, d := range fresh {
		keep[c] = d
		break
	}
	res, err := s.GC(context.Background(), GCOptions{Live: seqOf(keep), Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dropped != len(old)-1 {
		t.Errorf("got %d dropped, want %d (the old chunks but the renewed one)", res.Dropped, len(old)-1)
	}
	mustHaveAll(t, s, fresh)
	if ok, _ := s.Has(renewed); !ok {
		t.Errorf("a chunk Put again within the grace period was collected")
	}
}

// TestGCConcurrentPuts runs GC while writers keep putting and readers keep
// reading live chunks; nothing written is lost, no read fails, and the store
// stays consistent.
func TestGCConcurrentPuts(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := openStore(t, Config{Dir: t.TempDir(), PackSize: 128 << 10, Now: clock})
	defer s.Close()
	first := fill(t, s, 25, 200)
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	live := map[cid.Cid][]byte{}
	n := 0
	for c, d := range first {
		if n%3 == 0 {
			live[c] = d
		}
		n++
	}
	var wg sync.WaitGroup
	var later map[cid.Cid][]byte
	wg.Go(func() { later = fill(t, s, 26, 200) })
	stop := make(chan struct{})
	wg.Go(func() { // readers of live chunks never miss while their packs move
		for {
			for c, d := range live {
				select {
				case <-stop:
					return
				default:
				}
				if got, err := s.Get(c); err != nil || string(got) != string(d) {
					t.Errorf("Get(live chunk) during GC: %v", err)
					return
				}
			}
		}
	})
	syncsBefore := s.Stats().IndexSyncs
	res, err := s.GC(context.Background(), GCOptions{Live: seqOf(live), Grace: time.Hour})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GC: %+v", res)
	// Relocations are synced (GC retires the old pack next); the
	// concurrent Puts of new chunks are not.
	if res.PacksRewritten > 0 && s.Stats().IndexSyncs == syncsBefore {
		t.Errorf("GC rewrote %d packs without a synced index write", res.PacksRewritten)
	}
	if res.Dropped != len(first)-len(live) || res.PacksRewritten == 0 {
		t.Errorf("got %d dropped, %d packs rewritten; want %d and some", res.Dropped, res.PacksRewritten, len(first)-len(live))
	}
	mustHaveAll(t, s, later) // fresh chunks are within the grace period
	mustHaveAll(t, s, live)
	mustVerify(t, s)
}
