package vaultdb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/weftsync/weft/protocol/entry"
)

// segPath is the path of segment n under dir.
func segPath(dir string, n uint32) string { return filepath.Join(dir, "log", segName(n)) }

func TestTornTailTruncated(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	es := f.chain(t, a, entry.Head{}, 5)
	tests := []struct {
		name string
		tail func(next []byte) []byte
	}{
		{"half a record", func(next []byte) []byte { return next[:len(next)/2] }},
		{"header only", func(next []byte) []byte { return next[:3] }},
		{"bad checksum", func(next []byte) []byte { b := append([]byte(nil), next...); b[len(b)-1] ^= 1; return b }},
		{"zeros", func([]byte) []byte { return make([]byte, 4096) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Dir: dir, Vault: f.vault}
			db, _ := openDB(t, cfg)
			if err := db.Append(es[:4]...); err != nil {
				t.Fatal(err)
			}
			db.Close()
			st, _ := os.Stat(segPath(dir, 1))
			fh, _ := os.OpenFile(segPath(dir, 1), os.O_WRONLY|os.O_APPEND, 0)
			fh.Write(tt.tail(appendFrame(nil, es[4].Bytes())))
			fh.Close()

			db, rep := openDB(t, cfg)
			defer db.Close()
			if len(rep.Truncated) != 1 || rep.Truncated[0].Start != st.Size() || len(rep.Damage) != 0 || rep.Dropped != 0 {
				t.Fatalf("got %+v, want one truncated tail at %d", rep, st.Size())
			}
			if st2, _ := os.Stat(segPath(dir, 1)); st2.Size() != st.Size() {
				t.Fatalf("segment is %d bytes after open, want %d", st2.Size(), st.Size())
			}
			mustHold(t, db, es[:4])
			if err := db.Append(es[4]); err != nil {
				t.Fatal(err)
			}
			mustHold(t, db, es)
		})
	}
}

func TestMidSegmentDamage(t *testing.T) {
	f := newFixture()
	a, b := identity(t, 1), identity(t, 2)
	ea := f.chain(t, a, entry.Head{}, 6)
	eb := f.chain(t, b, entry.Head{}, 2)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	var offs []int64
	for _, e := range append(ea, eb...) {
		if err := db.Append(e); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, db.w.size)
	}
	db.Close()
	// Flip a byte inside ea[2] (seq 3): it lies in [offs[1], offs[2]).
	data, _ := os.ReadFile(segPath(dir, 1))
	data[offs[1]+40] ^= 0xff
	os.WriteFile(segPath(dir, 1), data, 0o600)

	db, rep := openDB(t, cfg)
	var ce *CorruptionError
	if err := rep.Err(); !errors.As(err, &ce) || len(ce.Ranges) != 1 || ce.Ranges[0].Start != offs[1] || ce.Ranges[0].End != offs[2] {
		t.Fatalf("got %v, want damage [%d,%d)", rep.Err(), offs[1], offs[2])
	}
	if rep.Dropped != 3 || len(rep.Gaps) != 1 || rep.Gaps[0].Seq != 3 || rep.Gaps[0].Dropped != 3 {
		t.Fatalf("got dropped %d gaps %+v, want seq 4-6 dropped after a gap at 3", rep.Dropped, rep.Gaps)
	}
	if !rep.Rebuilt || !rep.NeedRescan {
		t.Fatalf("index held the damaged entries: got Rebuilt=%v, want a rebuild", rep.Rebuilt)
	}
	mustHold(t, db, append(append([]*entry.Entry(nil), ea[:2]...), eb...))
	// A peer sends seq 3 again: it is appended at the end, and at the
	// next Open seq 4-6, still in the file, chain onto it again.
	if err := db.Append(ea[2]); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, rep = openDB(t, cfg)
	defer db.Close()
	if rep.Dropped != 0 || len(rep.Damage) != 1 || rep.Reindexed != 3 {
		t.Fatalf("after refetch: got %+v, want 0 dropped, the old damage, 3 reindexed", rep)
	}
	mustHold(t, db, append(append([]*entry.Entry(nil), ea...), eb...))
}

func TestInvalidEntryDropped(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	es := f.chain(t, a, entry.Head{}, 3)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	db.Append(es[:2]...)
	db.Close()
	// A well-framed record whose entry has a broken signature.
	bad := append([]byte(nil), es[2].Bytes()...)
	bad[len(bad)-1] ^= 1
	fh, _ := os.OpenFile(segPath(dir, 1), os.O_WRONLY|os.O_APPEND, 0)
	fh.Write(appendFrame(nil, bad))
	fh.Close()
	db, rep := openDB(t, cfg)
	defer db.Close()
	if rep.Dropped != 1 || rep.Entries != 2 {
		t.Fatalf("got %+v, want 1 dropped, 2 held", rep)
	}
	mustHold(t, db, es[:2])
}

// TestIndexCorruption damages the goleveldb index in many ways. Every
// time, Open must succeed with every entry and head intact, and report a
// rebuild.
func TestIndexCorruption(t *testing.T) {
	f := newFixture()
	a, b := identity(t, 1), identity(t, 2)
	ea := f.chain(t, a, entry.Head{}, 30)
	eb := f.chain(t, b, entry.Head{}, 10)
	all := append(append([]*entry.Entry(nil), ea...), eb...)

	// build makes a DB whose index has a table file (.ldb) and a journal
	// (.log) with data in both, under root/db, beside a user's folder
	// (root/folder) that no rebuild may touch.
	build := func(t *testing.T) (root, dir string) {
		root = t.TempDir()
		dir = filepath.Join(root, "db")
		userFolder(t, root)
		db, _ := openDB(t, Config{Dir: dir, Vault: f.vault})
		for _, e := range ea {
			var u Update
			u.PutIndex("p/"+e.CID().String()[:12], Record{Kind: entry.KindDir, Mode: 0o755})
			if err := db.AppendWith(&u, e); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.idx.CompactRange(util.Range{}); err != nil {
			t.Fatal(err)
		}
		if err := db.Append(eb...); err != nil {
			t.Fatal(err)
		}
		db.Close()
		return root, dir
	}
	files := func(dir, suffix string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, "index", "*"+suffix))
		return m
	}
	flip := func(off func(size int64) int64) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil || len(data) == 0 {
				t.Fatalf("reading %s: %d bytes, %v", path, len(data), err)
			}
			data[off(int64(len(data)))] ^= 0x5a
			os.WriteFile(path, data, 0o644)
		}
	}
	truncate := func(frac float64) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			st, _ := os.Stat(path)
			os.Truncate(path, int64(float64(st.Size())*frac))
		}
	}
	remove := func(t *testing.T, path string) { os.Remove(path) }
	tests := []struct {
		name   string
		suffix string // which index files to damage
		damage func(t *testing.T, path string)
	}{
		{"flip table start", ".ldb", flip(func(int64) int64 { return 10 })},
		{"flip table middle", ".ldb", flip(func(n int64) int64 { return n / 2 })},
		{"flip table footer", ".ldb", flip(func(n int64) int64 { return n - 5 })},
		{"truncate table", ".ldb", truncate(0.5)},
		{"empty table", ".ldb", truncate(0)},
		{"delete table", ".ldb", remove},
		{"flip journal start", ".log", flip(func(int64) int64 { return 20 })},
		{"flip journal middle", ".log", flip(func(n int64) int64 { return n / 2 })},
		{"flip journal end", ".log", flip(func(n int64) int64 { return n - 2 })},
		{"truncate journal", ".log", truncate(0.5)},
		{"flip manifest", "MANIFEST-*", flip(func(n int64) int64 { return n / 2 })},
		{"truncate manifest", "MANIFEST-*", truncate(0.3)},
		{"delete manifest", "MANIFEST-*", remove},
		{"delete CURRENT", "CURRENT", remove},
		{"garble CURRENT", "CURRENT", flip(func(int64) int64 { return 3 })},
		{"delete index", "", func(t *testing.T, path string) { os.RemoveAll(path) }},
		{"index is a file", "", func(t *testing.T, path string) { os.RemoveAll(path); os.WriteFile(path, []byte("x"), 0o644) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir := build(t)
			var targets []string
			switch {
			case tt.suffix == "":
				targets = []string{filepath.Join(dir, "index")}
			case strings.Contains(tt.suffix, "*") || tt.suffix == "CURRENT":
				targets, _ = filepath.Glob(filepath.Join(dir, "index", tt.suffix))
			default:
				targets = files(dir, tt.suffix)
			}
			if len(targets) == 0 {
				t.Fatalf("no index file matches %q", tt.suffix)
			}
			for _, p := range targets {
				tt.damage(t, p)
			}
			before := treeState(t, root, skipIndex("db"))
			db, rep, err := Open(dir, f.vault)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			if !rep.Rebuilt || !rep.NeedRescan || rep.Entries != len(all) {
				t.Fatalf("got %+v, want Rebuilt with %d entries", rep, len(all))
			}
			// Not a user file, not a log segment, not a byte outside
			// the index changed.
			sameTree(t, "rebuilding the index", before, treeState(t, root, skipIndex("db")))
			mustHold(t, db, all)
			if err := db.Append(f.next(t, a, ea[29].Head(), "after")); err != nil {
				t.Fatalf("Append after rebuild: %v", err)
			}
		})
	}
}

// TestReindexAfterLostIndexBatch simulates a crash between the segment
// fsync and the index batch: the index lacks entries the logs hold.
func TestReindexAfterLostIndexBatch(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	es := f.chain(t, a, entry.Head{}, 5)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	db.Append(es...)
	db.Close()
	idx, err := leveldb.OpenFile(filepath.Join(dir, "index"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es[3:] {
		idx.Delete(locKey(e.Author(), e.Seq()), nil)
		idx.Delete(cidKey(e.CID()), nil)
	}
	idx.Put(headKey(a.ID()), headValue(es[2].Head()), nil)
	idx.Close()
	db, rep := openDB(t, cfg)
	defer db.Close()
	if rep.Rebuilt || rep.Reindexed != 2 || !rep.NeedRescan {
		t.Fatalf("got %+v, want 2 reindexed without a rebuild", rep)
	}
	mustHold(t, db, es)
}

// TestDroppedLogTail loses acknowledged entries from the logs (what a disk
// that drops written data, or goleveldb's silent tail drop if the logs
// lived in it, would do): Open must hold what is left, report the loss as
// a sequence gap (Lost, and Gaps where later entries no longer chain),
// rebuild the index without touching a user file, and take the lost
// entries again when a peer sends them.
func TestDroppedLogTail(t *testing.T) {
	f := newFixture()
	a, b := identity(t, 1), identity(t, 2)
	ea := f.chain(t, a, entry.Head{}, 10)
	eb := f.chain(t, b, entry.Head{}, 2)
	tests := []struct {
		name string
		// perSeg is how many records a segment holds (0: one segment
		// for all); cut damages the files and returns the first seq
		// of a it lost.
		perSeg int
		cut    func(t *testing.T, dir string, ends map[uint64]loc) uint64
		// gap says the entries after the lost ones are still in the
		// logs but no longer chain: a Gap.
		gap bool
	}{
		{"last segment, at a record boundary", 0, func(t *testing.T, dir string, ends map[uint64]loc) uint64 {
			os.Truncate(segPath(dir, 1), ends[6].off+int64(ends[6].n))
			return 7
		}, false},
		{"last segment, inside a record", 0, func(t *testing.T, dir string, ends map[uint64]loc) uint64 {
			os.Truncate(segPath(dir, 1), ends[7].off+int64(ends[7].n)/2)
			return 7
		}, false},
		{"whole last segment", 3, func(t *testing.T, dir string, ends map[uint64]loc) uint64 {
			last := ends[10].seg
			os.Remove(segPath(dir, last))
			first := uint64(10)
			for first > 1 && ends[first-1].seg == last {
				first--
			}
			return first
		}, false},
		{"tail of an earlier segment", 3, func(t *testing.T, dir string, ends map[uint64]loc) uint64 {
			// Cut the last record of a's off the end of the first
			// segment that is followed by another: the entries in the
			// later segments no longer chain.
			for seq := uint64(2); seq < 10; seq++ {
				if l := ends[seq]; ends[seq+1].seg != l.seg {
					os.Truncate(segPath(dir, l.seg), l.off)
					return seq
				}
			}
			t.Fatal("a's entries all in one segment")
			return 0
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "db")
			userFolder(t, root)
			cfg := Config{Dir: dir, Vault: f.vault}
			if tt.perSeg > 0 {
				cfg.SegmentSize = int64(tt.perSeg * len(appendFrame(nil, ea[0].Bytes())))
			}
			db, _ := openDB(t, cfg)
			// b's entries go first, so that only a's are lost.
			if err := db.Append(eb...); err != nil {
				t.Fatal(err)
			}
			ends := map[uint64]loc{}
			for _, e := range ea {
				var u Update
				u.PutIndex("notes/"+e.CID().String()[:12], Record{Kind: entry.KindDir, Mode: 0o755})
				if err := db.AppendWith(&u, e); err != nil {
					t.Fatal(err)
				}
				v, err := db.idx.Get(locKey(e.Author(), e.Seq()), nil)
				if err != nil {
					t.Fatal(err)
				}
				ends[e.Seq()], _, _ = parseLocValue(v)
			}
			var mu Update
			mu.SetMeta("known-peers", []byte("where the members listen"))
			if err := db.Commit(&mu); err != nil {
				t.Fatal(err)
			}
			db.Close()
			from := tt.cut(t, dir, ends)

			// Only the last segment may be cut back by Open (a torn
			// tail); nothing else outside the index may change.
			skip := func(rel string) bool {
				return skipIndex("db")(rel) || strings.HasPrefix(rel, filepath.Join("db", "log"))
			}
			before := treeState(t, root, skip)
			db, rep := openDB(t, cfg)
			sameTree(t, "recovering a lost log tail", before, treeState(t, root, skip))
			if len(rep.Lost) != 1 || rep.Lost[0].Author != a.ID() || rep.Lost[0].Seq != from || rep.Lost[0].Dropped != 10-int(from)+1 {
				t.Fatalf("Lost = %+v, want %s from seq %d, %d entries", rep.Lost, a.ID().Short(), from, 10-from+1)
			}
			if !rep.Rebuilt || !rep.NeedRescan {
				t.Fatalf("got %+v, want a rebuilt index and a rescan", rep)
			}
			// The node's metadata survives the rebuild: without where
			// its members listen, the device could not reach the peers
			// it must take the lost entries back from.
			if m, ok, err := db.Meta("known-peers"); err != nil || !ok || string(m) != "where the members listen" {
				t.Fatalf("metadata after the rebuild: got %q, %v, %v; want it kept", m, ok, err)
			}
			if want := int(10 - from); tt.gap && (len(rep.Gaps) != 1 || rep.Gaps[0].Seq != from || rep.Gaps[0].Dropped != want) {
				t.Fatalf("Gaps = %+v, want seq %d with %d dropped", rep.Gaps, from, want)
			} else if !tt.gap && len(rep.Gaps) != 0 {
				t.Fatalf("Gaps = %+v, want none", rep.Gaps)
			}
			if h := db.Head(a.ID()); h.Seq != from-1 {
				t.Fatalf("head of a at %d, want %d", h.Seq, from-1)
			}
			if _, err := db.Get(a.ID(), from); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get of a lost entry: %v, want ErrNotFound", err)
			}
			held := append(append([]*entry.Entry(nil), ea[:from-1]...), eb...)
			mustHold(t, db, held)

			// A peer sends the missing entries again: they are taken as
			// new, and after a reopen everything is there and clean.
			if err := db.Append(ea[from-1:]...); err != nil {
				t.Fatalf("appending the refetched entries: %v", err)
			}
			all := append(append([]*entry.Entry(nil), ea...), eb...)
			mustHold(t, db, all)
			db.Close()
			db, rep = openDB(t, cfg)
			defer db.Close()
			if rep.Rebuilt || len(rep.Lost) != 0 || rep.Reindexed != 0 {
				t.Fatalf("reopen after refetch: got %+v, want nothing to repair", rep)
			}
			mustHold(t, db, all)
		})
	}
}
