package pack

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/internal/levelfault"
)

// faultyDisk opens the index through a levelfault.Disk, whose Full switch
// fills the disk under it (goleveldb's IO is outside the FS seam).
func faultyDisk(t *testing.T) *levelfault.Disk {
	d := &levelfault.Disk{}
	t.Cleanup(d.Close)
	return d
}

// TestIndexWriteFault fills the disk under the index while chunks are
// put: the pack fsync succeeds, the index batch fails. The caller gets the
// error; while the disk stays full Puts keep failing and reads keep
// working (the index is reopened read-only); once space returns the next
// write (a scrub step here, or a Put) reopens the index in place (heal),
// indexes what the failed batches left in the packs, and Puts succeed
// without reopening the Store; every
// acknowledged chunk is intact, index and packs agree, and a fresh Open
// after a clean Close finds nothing to repair.
func TestIndexWriteFault(t *testing.T) {
	t.Parallel()
	lf := faultyDisk(t)
	cfg := Config{Dir: t.TempDir(), PackSize: 256 << 10, openIndex: lf.Open}
	s := openStore(t, cfg)
	rng := rand.New(rand.NewPCG(3, 3))
	acked := map[cid.Cid][]byte{}
	put := func() error {
		c, data := randChunk(t, rng, 1000+rng.IntN(9000))
		err := s.Put(c, data)
		if err == nil {
			acked[c] = data
		}
		return err
	}
	for range 20 {
		if err := put(); err != nil {
			t.Fatal(err)
		}
	}
	lf.Full.Store(true)
	if err := put(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Put with the index's disk full: got %v, want ENOSPC", err)
	}
	mustHaveAll(t, s, acked)
	for range 3 {
		// heal cannot open the index for writing: read-only, reads go on.
		if err := put(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Put with the disk still full: got %v, want ENOSPC", err)
		}
		mustHaveAll(t, s, acked)
	}
	if _, err := s.ScrubStep(1 << 20); err == nil {
		t.Fatalf("ScrubStep with the disk full succeeded")
	}
	lf.Full.Store(false) // space returns
	// The scrub (like GC) reopens the index itself, without waiting for
	// a Put.
	if _, err := s.ScrubStep(1 << 20); err != nil {
		t.Fatalf("ScrubStep after space returned: %v", err)
	}
	if s.broken.Load() || s.recovery.healed != 1 {
		t.Fatalf("after ScrubStep: broken %v, healed %d times; want reopened once", s.broken.Load(), s.recovery.healed)
	}
	for range 20 {
		if err := put(); err != nil {
			t.Fatalf("Put after space returned: %v", err)
		}
	}
	mustHaveAll(t, s, acked)
	mustVerify(t, s)
	if s.recovery.healed != 1 {
		t.Errorf("index reopened %d times after a failed write, want 1", s.recovery.healed)
	}
	s = reopenClean(t, s, cfg, acked)
	defer s.Close()
	for range 20 {
		if err := put(); err != nil {
			t.Fatalf("Put after reopening: %v", err)
		}
	}
	mustHaveAll(t, s, acked)
	mustVerify(t, s)
}

// TestIndexWriteFaultConcurrent fills and frees the index's disk a few
// times while writers Put, readers Get every acknowledged chunk, and GC and
// the scrub run: reads never fail, no acknowledged chunk is lost, and once
// space returns for good the store works on without being reopened. It is
// meant for the race detector.
func TestIndexWriteFaultConcurrent(t *testing.T) {
	t.Parallel()
	lf := faultyDisk(t)
	cfg := Config{Dir: t.TempDir(), PackSize: 128 << 10, openIndex: lf.Open}
	s := openStore(t, cfg)
	var mu sync.Mutex
	acked := map[cid.Cid][]byte{}
	var ackedList []cid.Cid
	var nAcked, nFailed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, data := randChunk(t, rng, 500+rng.IntN(4000))
				if err := s.Put(c, data); err != nil {
					nFailed.Add(1)
					continue
				}
				mu.Lock()
				acked[c] = data
				ackedList = append(ackedList, c)
				mu.Unlock()
				nAcked.Add(1)
			}
		})
	}
	for r := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 11))
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				if len(ackedList) == 0 {
					mu.Unlock()
					continue
				}
				c := ackedList[rng.IntN(len(ackedList))]
				want := acked[c]
				mu.Unlock()
				got, err := s.Get(c)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("Get(%s) of an acknowledged chunk: %v", c, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				mu.Lock()
				live := slices.Clone(ackedList)
				mu.Unlock()
				s.GC(context.Background(), GCOptions{Live: slices.Values(live), AllowEmptyLiveSet: true}) // errors while full are expected
			} else {
				s.ScrubStep(64 << 10)
			}
		}
	})
	waitFor := func(n *atomic.Int64, atLeast int64) {
		for n.Load() < atLeast && !t.Failed() {
			runtime.Gosched()
		}
	}
	for round := range 3 {
		waitFor(&nAcked, int64(100*(round+1)))
		lf.Full.Store(true)
		waitFor(&nFailed, nFailed.Load()+20)
		lf.Full.Store(false)
	}
	waitFor(&nAcked, nAcked.Load()+100)
	close(stop)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Alone now: every Put must succeed.
	rng := rand.New(rand.NewPCG(99, 99))
	for range 20 {
		c, data := randChunk(t, rng, 2000)
		if err := s.Put(c, data); err != nil {
			t.Fatalf("Put after space returned: %v", err)
		}
		acked[c] = data
	}
	mustHaveAll(t, s, acked)
	mustVerify(t, s)
	if s.recovery.healed == 0 {
		t.Errorf("the index was never reopened")
	}
	reopenClean(t, s, cfg, acked).Close()
}

// reopenClean closes s, opens cfg's store again and checks that the Open
// repaired nothing (a reopen in place left no work for the next Open) and
// that every acknowledged chunk is there. The caller closes the store.
func reopenClean(t *testing.T, s *Store, cfg Config, acked map[cid.Cid][]byte) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openStore(t, cfg)
	if s.recovery.repaired() {
		t.Errorf("Open after a clean Close repaired something: %+v", s.recovery)
	}
	mustHaveAll(t, s, acked)
	mustVerify(t, s)
	return s
}
