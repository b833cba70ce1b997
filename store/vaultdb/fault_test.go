package vaultdb

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/member"
)

// faultFS is OSFS with injectable failures: every write, sync and file
// creation counts as one operation, and operation number failAt (from 1)
// and every later one fail with err until clear is called.
type faultFS struct {
	OSFS
	// mu guards the fields below.
	mu     sync.Mutex
	ops    int
	failAt int // 0: never
	err    error
}

func (f *faultFS) arm(at int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops, f.failAt, f.err = 0, at, err
}

func (f *faultFS) clear() { f.arm(0, nil) }

func (f *faultFS) op() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops++
	if f.failAt > 0 && f.ops >= f.failAt {
		return f.err
	}
	return nil
}

func (f *faultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.op(); err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
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
	if err := f.fs.op(); err != nil {
		// Write part of it, as a full disk does.
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.op(); err != nil {
		return err
	}
	return f.File.Sync()
}

func TestIOFaults(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	es := f.chain(t, a, entry.Head{}, 12)
	tests := []struct {
		name string
		at   int
		err  error
	}{
		{"disk full on write", 1, syscall.ENOSPC},
		{"EIO on fsync", 2, syscall.EIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := &faultFS{}
			dir := t.TempDir()
			cfg := Config{Dir: dir, Vault: f.vault, FS: fsys}
			db, _ := openDB(t, cfg)
			if err := db.Append(es[:4]...); err != nil {
				t.Fatal(err)
			}
			size := db.w.size
			fsys.arm(tt.at, tt.err)
			if err := db.Append(es[4:8]...); !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %v", err, tt.err)
			}
			if h := db.Head(a.ID()); h.Seq != 4 {
				t.Fatalf("head after failed Append: got %d, want 4", h.Seq)
			}
			if _, err := db.Get(a.ID(), 5); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get of failed entry: got %v, want ErrNotFound", err)
			}
			if st, _ := os.Stat(segPath(dir, 1)); st.Size() != size {
				t.Fatalf("segment is %d bytes after failure, want %d (cut back)", st.Size(), size)
			}
			fsys.clear()
			if err := db.Append(es[4:]...); err != nil {
				t.Fatalf("Append after the fault cleared: %v", err)
			}
			mustHold(t, db, es)
			db.Close()
			db, rep := openDB(t, cfg)
			defer db.Close()
			if rep.Dropped != 0 || len(rep.Truncated) != 0 || len(rep.Damage) != 0 {
				t.Fatalf("reopen: got %+v, want clean", rep)
			}
			mustHold(t, db, es)
		})
	}
}

// TestIOFaultEveryOp fails the Nth file operation of an Append that
// rotates segments, for every N, as SQLite's ioerr tests do: each time the
// Append fails and leaves the old state (in memory and after reopen), or
// succeeds and leaves the new state; and Append works once the fault
// clears.
func TestIOFaultEveryOp(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	es := f.chain(t, a, entry.Head{}, 10)
	for n := 1; ; n++ {
		fsys := &faultFS{}
		dir := t.TempDir()
		cfg := Config{Dir: dir, Vault: f.vault, FS: fsys, SegmentSize: 1000}
		db, _ := openDB(t, cfg)
		if err := db.Append(es[:3]...); err != nil {
			t.Fatal(err)
		}
		fsys.arm(n, syscall.EIO)
		err := db.Append(es[3:8]...)
		fsys.clear()
		want := es[:8]
		if err != nil {
			want = es[:3]
		}
		mustHold(t, db, want)
		db.Close()
		db, rep := openDB(t, cfg)
		if rep.Dropped != 0 || len(rep.Damage) != 0 || rep.Reindexed != 0 {
			t.Fatalf("op %d: reopen got %+v, want clean", n, rep)
		}
		mustHold(t, db, want)
		if err := db.Append(es[len(want):]...); err != nil {
			t.Fatalf("op %d: Append after fault: %v", n, err)
		}
		mustHold(t, db, es)
		db.Close()
		if err == nil {
			if n < 4 {
				t.Fatalf("only %d ops: the Append did not rotate", n)
			}
			break
		}
	}
}

func TestMemberIOFault(t *testing.T) {
	f := newFixture()
	admin := identity(t, 1)
	fsys := &faultFS{}
	dir := t.TempDir()
	db, _ := openDB(t, Config{Dir: dir, Vault: f.vault, FS: fsys})
	defer db.Close()
	g := member.Genesis(admin, f.root.VaultKey(), 1)
	fsys.arm(1, syscall.ENOSPC)
	if err := db.AppendMember(g); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", err)
	}
	if n := len(db.MemberRecords()); n != 0 {
		t.Fatalf("got %d records after a failed append, want 0", n)
	}
	fsys.clear()
	if err := db.AppendMember(g); err != nil {
		t.Fatal(err)
	}
	if n := len(db.MemberRecords()); n != 1 {
		t.Fatalf("got %d records, want 1", n)
	}
}
