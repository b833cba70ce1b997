package vaultdb

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"

	"github.com/weftsync/weft/protocol/entry"
)

// levelFaults makes openLevelDB open goleveldb on a storage whose journal
// writes and syncs fail while full is set: a disk that filled up under the
// index (goleveldb's own IO is outside the FS seam). A failing write writes
// half its bytes first. It restores openLevelDB when the test ends.
type levelFaults struct {
	full atomic.Bool
	mu   sync.Mutex
	open map[string]storage.Storage // by path: closed at the next open
}

func injectLevelFaults(t *testing.T) *levelFaults {
	lf := &levelFaults{open: map[string]storage.Storage{}}
	prev := openLevelDB
	openLevelDB = func(path string, o *opt.Options) (*leveldb.DB, error) {
		lf.mu.Lock()
		defer lf.mu.Unlock()
		// leveldb.Open does not close a storage it did not open. The
		// test has one DB, which opens one index at a time: whatever
		// it opened before is closed by now (index.new is renamed to
		// index with its lock held otherwise).
		for p, st := range lf.open {
			st.Close()
			delete(lf.open, p)
		}
		st, err := storage.OpenFile(path, o.GetReadOnly())
		if err != nil {
			return nil, err
		}
		db, err := leveldb.Open(faultStorage{st, lf}, o)
		if err != nil {
			st.Close()
			return nil, err
		}
		lf.open[path] = st
		return db, nil
	}
	t.Cleanup(func() {
		openLevelDB = prev
		for _, st := range lf.open {
			st.Close()
		}
	})
	return lf
}

type faultStorage struct {
	storage.Storage
	lf *levelFaults
}

func (s faultStorage) Create(fd storage.FileDesc) (storage.Writer, error) {
	if s.lf.full.Load() {
		return nil, syscall.ENOSPC
	}
	w, err := s.Storage.Create(fd)
	if err != nil || fd.Type != storage.TypeJournal {
		return w, err
	}
	return faultWriter{w, s.lf}, nil
}

type faultWriter struct {
	storage.Writer
	lf *levelFaults
}

func (w faultWriter) Write(p []byte) (int, error) {
	if w.lf.full.Load() {
		n, _ := w.Writer.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return w.Writer.Write(p)
}

func (w faultWriter) Sync() error {
	if w.lf.full.Load() {
		return syscall.ENOSPC
	}
	return w.Writer.Sync()
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
	lf.full.Store(true)
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

	lf.full.Store(false) // space returns
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
