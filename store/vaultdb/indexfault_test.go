package vaultdb

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/weftsync/weft/internal/levelfault"
	"github.com/weftsync/weft/protocol/entry"
)

// injectLevelFaults makes openLevelDB open goleveldb through a
// levelfault.Disk, whose Full switch fills the disk under the index
// (goleveldb's IO is outside the FS seam), until the test ends.
func injectLevelFaults(t *testing.T) *levelfault.Disk {
	d := &levelfault.Disk{}
	prev := openLevelDB
	openLevelDB = d.Open
	t.Cleanup(func() {
		openLevelDB = prev
		d.Close()
	})
	return d
}

// TestIndexWriteFault fills the disk under the index after the segment
// write of an Append succeeded. The caller gets the error and nothing of
// that Append becomes visible; while the disk is full, Appends keep
// failing with ErrBroken; once space returns the next Append reopens the
// index (goleveldb refuses every write after a failed journal write until
// then) and indexes the entries the failed Append had made durable, and
// the DB goes on with its folder index intact. A reopen then finds nothing
// to repair: the torn journal record is gone.
func TestIndexWriteFault(t *testing.T) {
	for _, stillFull := range []bool{false, true} {
		t.Run(fmt.Sprintf("append while still full=%v", stillFull), func(t *testing.T) {
			testIndexWriteFault(t, stillFull)
		})
	}
}

func testIndexWriteFault(t *testing.T, stillFull bool) {
	f := newFixture()
	a := identity(t, 1)
	es := f.chain(t, a, entry.Head{}, 10)
	lf := injectLevelFaults(t)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	path := func(e *entry.Entry) string { return "notes/" + e.CID().String()[:12] }
	put := func(es ...*entry.Entry) error {
		var u Update
		for _, e := range es {
			u.PutIndex(path(e), Record{Kind: entry.KindDir, Mode: 0o755})
		}
		return db.AppendWith(&u, es...)
	}
	folderHas := func(t *testing.T, es ...*entry.Entry) {
		t.Helper()
		for _, e := range es {
			if _, ok, err := db.IndexGet(path(e)); !ok || err != nil {
				t.Fatalf("folder record of seq %d: %v %v", e.Seq(), ok, err)
			}
		}
	}
	for _, e := range es[:4] {
		if err := put(e); err != nil {
			t.Fatal(err)
		}
	}
	lf.Full.Store(true)
	if err := put(es[4:6]...); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append with the index's disk full: got %v, want ENOSPC", err)
	}
	if h := db.Head(a.ID()); h.Seq != 4 {
		t.Fatalf("head after the failed Append: %d, want 4", h.Seq)
	}
	if _, err := db.Get(a.ID(), 5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an entry whose Append failed: %v, want ErrNotFound", err)
	}
	mustHold(t, db, es[:4])
	folderHas(t, es[:4]...)
	if stillFull {
		// The reopen fails (goleveldb cannot start a journal), and so
		// does the Append; the index is open read-only, reads go on,
		// also while the reopen runs (readers in parallel, for -race).
		stop := make(chan struct{})
		var readers sync.WaitGroup
		var errMu sync.Mutex
		var readErr error
		fail := func(err error) {
			errMu.Lock()
			defer errMu.Unlock()
			if readErr == nil {
				readErr = err
			}
		}
		for range 2 {
			readers.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := db.Get(a.ID(), 2); err != nil {
						fail(err)
					}
					if _, ok, err := db.IndexGet(path(es[1])); !ok || err != nil {
						fail(fmt.Errorf("IndexGet: %v %v", ok, err))
					}
				}
			})
		}
		for _, e := range es[6:8] {
			if err := put(e); !errors.Is(err, ErrBroken) {
				t.Fatalf("Append while the disk is still full: got %v, want ErrBroken", err)
			}
		}
		close(stop)
		readers.Wait()
		if readErr != nil {
			t.Fatalf("a read while the index was broken: %v", readErr)
		}
		mustHold(t, db, es[:4])
		folderHas(t, es[:4]...)
	}

	lf.Full.Store(false) // space returns
	// The failed Append's entries were durable in the segment: the reopen
	// indexes them, so sending them again finds them held, and its
	// folder records commit.
	if err := put(es[4:6]...); err != nil {
		t.Fatalf("Append after space returned: %v", err)
	}
	for _, e := range es[6:] {
		if err := put(e); err != nil {
			t.Fatalf("Append after space returned: %v", err)
		}
	}
	mustHold(t, db, es)
	folderHas(t, es...)
	db.Close()

	db, rep := openDB(t, cfg)
	defer db.Close()
	if rep.Rebuilt || rep.Reindexed != 0 || len(rep.Lost) != 0 || rep.NeedRescan || rep.Dropped != 0 {
		t.Fatalf("reopen: got %+v, want nothing to repair", rep)
	}
	mustHold(t, db, es)
	folderHas(t, es...)
}
