package levelfault

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
)

// Disk is where the databases it opens live. While Full is set, creating a
// file fails, and a journal write writes half its bytes and fails, with
// ENOSPC, as does a journal sync.
type Disk struct {
	Full atomic.Bool

	mu   sync.Mutex
	open []storage.Storage // closed at the next Open and by Close
}

// Open has leveldb.OpenFile's shape, to stand in for it. leveldb.Open does
// not close a storage it did not open, so Open closes the storages of
// earlier opens: the stores under test open one index at a time, and
// whatever they opened before is closed by the time they open again.
func (d *Disk) Open(path string, o *opt.Options) (*leveldb.DB, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeLocked()
	st, err := storage.OpenFile(path, o.GetReadOnly())
	if err != nil {
		return nil, err
	}
	db, err := leveldb.Open(faultStorage{st, d}, o)
	if err != nil {
		st.Close()
		return nil, err
	}
	d.open = append(d.open, st)
	return db, nil
}

// Close closes the storages still open; call it when the test ends.
func (d *Disk) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeLocked()
}

func (d *Disk) closeLocked() {
	for _, st := range d.open {
		st.Close()
	}
	d.open = nil
}

type faultStorage struct {
	storage.Storage
	d *Disk
}

func (s faultStorage) Create(fd storage.FileDesc) (storage.Writer, error) {
	if s.d.Full.Load() {
		return nil, syscall.ENOSPC
	}
	w, err := s.Storage.Create(fd)
	if err != nil || fd.Type != storage.TypeJournal {
		return w, err
	}
	return faultWriter{w, s.d}, nil
}

type faultWriter struct {
	storage.Writer
	d *Disk
}

func (w faultWriter) Write(p []byte) (int, error) {
	if w.d.Full.Load() {
		n, _ := w.Writer.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return w.Writer.Write(p)
}

func (w faultWriter) Sync() error {
	if w.d.Full.Load() {
		return syscall.ENOSPC
	}
	return w.Writer.Sync()
}
