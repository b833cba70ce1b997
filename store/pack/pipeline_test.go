package pack

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/weftsync/weft/store/chunkrec"
)

// TestConcurrentDuplicates: writers that Put the same chunks at the same
// time store each chunk once, whichever batches the copies land in (the
// same batch, or one batch being written while the other is synced), also
// across pack rotations.
func TestConcurrentDuplicates(t *testing.T) {
	const writers, chunks = 8, 150
	s := openStore(t, Config{Dir: t.TempDir(), PackSize: 128 << 10})
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	cids := make([]cid.Cid, chunks)
	datas := make([][]byte, chunks)
	for i := range cids {
		cids[i], datas[i] = randChunk(t, rng, 1000+rng.IntN(9000))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			order := rand.New(rand.NewPCG(uint64(w), 5)).Perm(chunks)
			if w%2 == 0 {
				order = order[:0]
				for i := range chunks {
					order = append(order, i) // half the writers go in step
				}
			}
			for _, i := range order {
				if err := s.Put(cids[i], datas[i]); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Chunks != chunks || st.Appends != chunks {
		t.Errorf("got %d chunks, %d appends; want %d of each (duplicates are not stored)", st.Chunks, st.Appends, chunks)
	}
	if st.Puts != writers*chunks {
		t.Errorf("got %d puts, want %d", st.Puts, writers*chunks)
	}
	want := map[cid.Cid][]byte{}
	for i := range cids {
		want[cids[i]] = datas[i]
	}
	mustHaveAll(t, s, want)
	mustVerify(t, s)
}

// TestFaultsConcurrent is TestFaults with eight concurrent writers and
// small packs, so that a failing write or fsync hits a batch while the
// next one is being appended to the same pack (or to the next one). Every
// acknowledged chunk stays intact, Puts work once the fault clears, and
// the store reopens consistent.
func TestFaultsConcurrent(t *testing.T) {
	t.Parallel()
	type fault struct {
		name          string
		writes, syncs int
	}
	var faults []fault
	for _, n := range []int{0, 3, 10} {
		faults = append(faults, fault{fmt.Sprintf("ENOSPC at write %d", n), n, -1})
	}
	for _, n := range []int{0, 1, 2, 5} {
		faults = append(faults, fault{fmt.Sprintf("EIO at fsync %d", n), -1, n})
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			fsys := newFaultFS()
			cfg := Config{Dir: t.TempDir(), FS: fsys, PackSize: 64 << 10}
			s := openStore(t, cfg)
			var mu sync.Mutex
			acked := map[cid.Cid][]byte{}
			// run has 8 writers Put until n Puts failed (or, with n = 0,
			// 15 Puts each) and returns how many failed.
			run := func(seed uint64, n int) int {
				var failed, wg = 0, sync.WaitGroup{}
				for w := range 8 {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(seed, uint64(w)))
						for i := 0; i < 400; i++ {
							mu.Lock()
							stop := (n > 0 && failed >= n) || (n == 0 && i >= 15)
							mu.Unlock()
							if stop {
								return
							}
							c, data := randChunk(t, rng, 1000+rng.IntN(12000))
							err := s.Put(c, data)
							mu.Lock()
							if err == nil {
								acked[c] = data
							} else {
								failed++
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				return failed
			}
			if n := run(1, 0); n != 0 {
				t.Fatalf("%d Puts failed before the fault", n)
			}
			fsys.arm(f.writes, f.syncs)
			if n := run(2, 10); n == 0 {
				t.Fatalf("no Put failed under the fault")
			}
			mustHaveAll(t, s, acked)
			fsys.clear()
			if n := run(3, 0); n != 0 {
				t.Fatalf("%d Puts failed after the fault cleared", n)
			}
			mustHaveAll(t, s, acked)
			mustVerify(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, cfg)
			defer s.Close()
			mustHaveAll(t, s, acked)
			mustVerify(t, s)
		})
	}
}

// TestSyncFailurePoisonsLaterBatches drives the two commit stages by hand:
// two batches are appended to the same pack, the first one's fsync fails,
// and the second one's would succeed. Neither may be acknowledged (after a
// failed fsync the file's page cache is not trusted), the pack is cut back
// to what was synced, and the next Put goes to a new pack.
func TestSyncFailurePoisonsLaterBatches(t *testing.T) {
	fsys := newFaultFS()
	cfg := Config{Dir: t.TempDir(), FS: fsys}
	s := openStore(t, cfg)
	rng := rand.New(rand.NewPCG(8, 8))
	acked := map[cid.Cid][]byte{}
	for range 3 {
		c, data := randChunk(t, rng, 3000)
		if err := s.Put(c, data); err != nil {
			t.Fatal(err)
		}
		acked[c] = data
	}
	before := s.Stats().BytesOnDisk
	batch := func() []*putReq {
		var b []*putReq
		for range 3 {
			c, data := randChunk(t, rng, 3000)
			b = append(b, &putReq{cidBytes: c.Bytes(), key: chunkKey(c.Bytes()), data: data, done: make(chan error, 1)})
		}
		return b
	}
	b1, b2 := batch(), batch()
	f1 := s.stage1(b1, nil) // the loop is idle: nothing else appends
	f2 := s.stage1(b2, nil)
	if len(f1.segs) != 1 || len(f2.segs) != 1 || f1.segs[0].f != f2.segs[0].f {
		t.Fatalf("got segments %v and %v, want one each in the same pack", f1.segs, f2.segs)
	}
	poisoned := map[File]bool{}
	fsys.arm(-1, 0)
	s.stage2(f1, poisoned)
	fsys.clear()
	s.stage2(f2, poisoned)
	for i, r := range append(b1, b2...) {
		if err := <-r.done; err == nil {
			t.Errorf("request %d: got nil error, want the fsync failure", i)
		}
	}
	for range 3 {
		c, data := randChunk(t, rng, 3000)
		if err := s.Put(c, data); err != nil {
			t.Fatalf("Put after the failure: %v", err)
		}
		acked[c] = data
	}
	st := s.Stats()
	if want := before + 3*chunkrec.Size(len(b1[0].cidBytes), 3000); st.BytesOnDisk != want {
		t.Errorf("got %d bytes on disk, want %d (the failed pack cut back, a new one started)", st.BytesOnDisk, want)
	}
	mustHaveAll(t, s, acked)
	mustVerify(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, cfg)
	defer s.Close()
	mustHaveAll(t, s, acked)
	mustVerify(t, s)
}
