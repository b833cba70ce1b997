package pack

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/ipfs/go-cid"
)

// faultFS is OSFS with injected failures: once armed, the Nth WriteAt (or
// Sync) and every one after it fails until cleared. A failing WriteAt
// writes half its bytes first, as a disk filling up mid-write does, and
// creating a file fails too.
type faultFS struct {
	OSFS
	mu         sync.Mutex
	writeAfter int // fail WriteAt once this many succeeded; <0: never
	syncAfter  int // fail Sync once this many succeeded; <0: never
	writes     int
	syncs      int
	full       bool // set once a WriteAt failed: creating files fails too
}

func newFaultFS() *faultFS { return &faultFS{writeAfter: -1, syncAfter: -1} }

func (f *faultFS) arm(writes, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeAfter, f.syncAfter, f.writes, f.syncs, f.full = writes, syncs, 0, 0, false
}

func (f *faultFS) clear() { f.arm(-1, -1) }

func (f *faultFS) writeFails() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writeAfter >= 0 && f.writes >= f.writeAfter {
		f.full = true
		return true
	}
	f.writes++
	return false
}

func (f *faultFS) syncFails() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.syncAfter >= 0 && f.syncs >= f.syncAfter {
		return true
	}
	f.syncs++
	return false
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f.mu.Lock()
	full := f.full
	f.mu.Unlock()
	if full && flag&os.O_CREATE != 0 {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

type faultFile struct {
	File
	fs *faultFS
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.writeFails() {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &os.PathError{Op: "write", Path: "pack", Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if f.fs.syncFails() {
		return &os.PathError{Op: "fsync", Path: "pack", Err: syscall.EIO}
	}
	return f.File.Sync()
}

// TestFaults injects disk-full on the Nth write, and IO errors on the Nth
// fsync, for N over a range. Puts fail while the fault lasts; afterwards
// every acknowledged chunk is intact, new puts work, and the store reopens
// consistent.
func TestFaults(t *testing.T) {
	t.Parallel()
	type fault struct {
		name          string
		writes, syncs int
	}
	var faults []fault
	for n := range 16 {
		faults = append(faults, fault{fmt.Sprintf("ENOSPC at write %d", n), n, -1})
	}
	for n := range 8 {
		faults = append(faults, fault{fmt.Sprintf("EIO at fsync %d", n), -1, n})
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			fsys := newFaultFS()
			dir := t.TempDir()
			cfg := Config{Dir: dir, FS: fsys, PackSize: 48 << 10}
			s := openStore(t, cfg)
			rng := rand.New(rand.NewPCG(41, uint64(f.writes*100+f.syncs)))
			acked := map[cid.Cid][]byte{}
			put := func() error {
				c, data := randChunk(t, rng, 2000+rng.IntN(12000))
				err := s.Put(c, data)
				if err == nil {
					acked[c] = data
				}
				return err
			}
			for range 5 {
				if err := put(); err != nil {
					t.Fatalf("Put before the fault: %v", err)
				}
			}
			fsys.arm(f.writes, f.syncs)
			failed := 0
			for i := 0; i < 200 && failed < 5; i++ {
				if err := put(); err != nil {
					failed++
				}
			}
			if failed == 0 {
				t.Fatalf("no Put failed under the fault")
			}
			mustHaveAll(t, s, acked)
			fsys.clear()
			for range 20 {
				if err := put(); err != nil {
					t.Fatalf("Put after the fault cleared: %v", err)
				}
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
