package pack

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
	"github.com/weftsync/weft/store/chunkrec"
)

// fill puts n random chunks of 1..8 KiB (and one of 300 KiB every 50) into
// s from 8 goroutines and returns them.
func fill(t testing.TB, s *Store, seed uint64, n int) map[cid.Cid][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	out := make(map[cid.Cid][]byte, n)
	work := make(chan cid.Cid, n)
	for i := range n {
		size := 1024 + rng.IntN(7*1024)
		if i%50 == 49 {
			size = 300 << 10
		}
		c, data := randChunk(t, rng, size)
		out[c] = data
		work <- c
	}
	close(work)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for c := range work {
				if err := s.Put(c, out[c]); err != nil {
					t.Errorf("Put: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// mustHaveAll fails unless s returns every chunk of want intact.
func mustHaveAll(t testing.TB, s *Store, want map[cid.Cid][]byte) {
	t.Helper()
	for c, data := range want {
		got, err := s.Get(c)
		if err != nil {
			t.Fatalf("Get(%s): %v", c, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("Get(%s): wrong bytes", c)
		}
	}
}

func lastPack(t testing.TB, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no packs in %s: %v", dir, err)
	}
	return m[len(m)-1]
}

func appendFile(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// withIndex opens a closed store's index directly, for tests that damage
// or edit it.
func withIndex(t testing.TB, dir string, fn func(db *leveldb.DB)) {
	t.Helper()
	db, err := leveldb.OpenFile(filepath.Join(dir, "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fn(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverTail covers what a crash can leave at the end of a pack: a
// torn record, garbage, and whole records that reached the pack but not the
// index (a crash between the pack fsync and the index write).
func TestRecoverTail(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	extraCID, extraData := randChunk(t, rng, 5000)
	extra := append(chunkrec.AppendHeader(nil, extraCID.Bytes(), extraData), extraData...)
	tornCID, tornData := randChunk(t, rng, 5000)
	torn := append(chunkrec.AppendHeader(nil, tornCID.Bytes(), tornData), tornData...)
	tests := []struct {
		name    string
		tail    []byte
		unclean bool
		want    []cid.Cid // chunks Open must find in the tail
		keep    int64     // bytes of the tail Open must keep
	}{
		{"torn record", torn[:len(torn)/2], false, nil, 0},
		{"torn header", torn[:7], false, nil, 0},
		{"garbage", bytes.Repeat([]byte{0x5a}, 100), false, nil, 0},
		{"unindexed record", extra, false, []cid.Cid{extraCID}, int64(len(extra))},
		{"unindexed record then torn one", append(bytes.Clone(extra), torn[:30]...), true, []cid.Cid{extraCID}, int64(len(extra))},
		{"unindexed record, garbage, record", append(append(bytes.Clone(extra), 1, 2, 3), torn...), true, []cid.Cid{extraCID, tornCID}, int64(len(extra) + 3 + len(torn))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, Config{Dir: dir})
			want := fill(t, s, 1, 100)
			s.Close()
			if tt.unclean {
				withIndex(t, dir, func(db *leveldb.DB) { db.Delete(keyClean, nil) })
			}
			pack := lastPack(t, dir)
			before := fileSize(t, pack)
			appendFile(t, pack, tt.tail)
			s = openStore(t, Config{Dir: dir})
			defer s.Close()
			if got := fileSize(t, pack); got != before+tt.keep {
				t.Errorf("pack is %d bytes after recovery, want %d", got, before+tt.keep)
			}
			mustHaveAll(t, s, want)
			for _, c := range tt.want {
				if ok, _ := s.Has(c); !ok {
					t.Errorf("record of %s in the tail was not indexed", c)
				}
			}
			mustVerify(t, s)
			// The store keeps working where recovery left it.
			more := fill(t, s, 2, 10)
			mustHaveAll(t, s, more)
			mustVerify(t, s)
		})
	}
}

// TestRecoverIndexPastEnd: when a pack lost bytes the index points at (a
// disk that lied about a flush), the entries are dropped, not served.
func TestRecoverIndexPastEnd(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		dir := t.TempDir()
		s := openStore(t, Config{Dir: dir})
		want := fill(t, s, 3, 60)
		s.Close()
		if unclean {
			withIndex(t, dir, func(db *leveldb.DB) { db.Delete(keyClean, nil) })
		}
		pack := lastPack(t, dir)
		if err := os.Truncate(pack, fileSize(t, pack)-100); err != nil {
			t.Fatal(err)
		}
		s = openStore(t, Config{Dir: dir})
		if got := s.Stats().Chunks; got != int64(len(want)-1) {
			t.Errorf("unclean=%v: got %d chunks, want %d (the cut record dropped)", unclean, got, len(want)-1)
		}
		mustVerify(t, s)
		s.Close()
	}
}

// TestRecoverLostIndexEntries: entries missing from the index while their
// records sit before the indexed length are lost to the index, but entries
// past it come back. Here the index forgets the last batches entirely (as a
// dropped journal tail would): entries and indexed lengths together.
func TestRecoverLostIndexEntries(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Config{Dir: dir})
	want := fill(t, s, 4, 80)
	s.Close()
	withIndex(t, dir, func(db *leveldb.DB) {
		b := new(leveldb.Batch)
		it := db.NewIterator(util.BytesPrefix([]byte{prefixChunk}), nil)
		for it.Next() {
			b.Delete(bytes.Clone(it.Key()))
		}
		it.Release()
		it = db.NewIterator(util.BytesPrefix([]byte{prefixTail}), nil)
		for it.Next() {
			b.Delete(bytes.Clone(it.Key()))
		}
		it.Release()
		if err := db.Write(b, nil); err != nil {
			t.Fatal(err)
		}
	})
	s = openStore(t, Config{Dir: dir})
	defer s.Close()
	mustHaveAll(t, s, want)
	mustVerify(t, s)
}

// packFiles maps each pack file's name to its size, mtime and SHA-256.
func packFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "packs", "*"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no packs in %s: %v", dir, err)
	}
	out := make(map[string]string, len(m))
	for _, p := range m {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = fmt.Sprintf("%d %d %x", fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(data))
	}
	return out
}

// TestRebuildIndex damages the goleveldb index in many ways; each time Open
// must detect it or cope, and every chunk must still be there.
func TestRebuildIndex(t *testing.T) {
	t.Parallel()
	glob := func(t *testing.T, dir, pat string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, "index", pat))
		return m
	}
	each := func(t *testing.T, dir, pat string, fn func(string)) {
		m := glob(t, dir, pat)
		if len(m) == 0 {
			t.Fatalf("no index files match %s", pat)
		}
		for _, p := range m {
			fn(p)
		}
	}
	flipMiddle := func(t *testing.T) func(string) {
		return func(p string) {
			if n := fileSize(t, p); n > 0 {
				flipByte(t, p, n/2)
			}
		}
	}
	truncHalf := func(t *testing.T) func(string) {
		return func(p string) { os.Truncate(p, fileSize(t, p)/2) }
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"index deleted", func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, "index")) }},
		{"manifest deleted", func(t *testing.T, dir string) { each(t, dir, "MANIFEST-*", func(p string) { os.Remove(p) }) }},
		{"CURRENT deleted", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "index", "CURRENT")) }},
		{"manifest flipped", func(t *testing.T, dir string) { each(t, dir, "MANIFEST-*", flipMiddle(t)) }},
		{"table flipped", func(t *testing.T, dir string) { each(t, dir, "*.ldb", flipMiddle(t)) }},
		{"table truncated", func(t *testing.T, dir string) { each(t, dir, "*.ldb", truncHalf(t)) }},
		{"table deleted", func(t *testing.T, dir string) { each(t, dir, "*.ldb", func(p string) { os.Remove(p) }) }},
		{"journal flipped", func(t *testing.T, dir string) { each(t, dir, "*.log", flipMiddle(t)) }},
		{"journal truncated", func(t *testing.T, dir string) { each(t, dir, "*.log", truncHalf(t)) }},
		{"journal deleted", func(t *testing.T, dir string) { each(t, dir, "*.log", func(p string) { os.Remove(p) }) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, Config{Dir: dir, PackSize: 256 << 10})
			want := fill(t, s, 5, 150)
			// Move what is there into tables, then write more so that
			// the journal holds something too.
			if err := s.db.CompactRange(util.Range{}); err != nil {
				t.Fatal(err)
			}
			for c, d := range fill(t, s, 6, 50) {
				want[c] = d
			}
			s.Close()
			tt.damage(t, dir)
			packs := packFiles(t, dir)
			s = openStore(t, Config{Dir: dir, PackSize: 256 << 10})
			defer s.Close()
			// The packs are the source of truth: rebuilding the index
			// reads them and changes none.
			if got := packFiles(t, dir); !maps.Equal(got, packs) {
				t.Fatalf("packs changed by the rebuild: %v -> %v", packs, got)
			}
			mustHaveAll(t, s, want)
			if got := s.Stats().Chunks; got != int64(len(want)) {
				t.Errorf("got %d chunks, want %d", got, len(want))
			}
			mustVerify(t, s)
			more := fill(t, s, 7, 10)
			mustHaveAll(t, s, more)
		})
	}
}
