package pack

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
)

// copyDir copies the regular files of src into dst (created), leaving out
// goleveldb's LOCK file.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// powerLoss makes in a new directory what a power failure now would leave
// of the open store in dir if the index lost every write made after the
// snapshot idxSnap: the packs as they are (every acknowledged record was
// fsynced) and the index as it was.
func powerLoss(t testing.TB, dir, idxSnap string) string {
	t.Helper()
	out := t.TempDir()
	copyDir(t, filepath.Join(dir, "packs"), filepath.Join(out, "packs"))
	copyDir(t, idxSnap, filepath.Join(out, "index"))
	return out
}

func countPacks(t testing.TB, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// TestLostUnsyncedIndexWrites: a batch's index write is not synced
// (syncer.go), so a power failure may take the index writes of the last
// batches, their packs' new indexed lengths with them. The test snapshots
// the index of an open store, puts more chunks (enough to seal the pack
// being appended to at the snapshot and several after it), and opens the
// packs as they are with the index as it was: every acknowledged chunk
// must be readable, and index and packs must agree.
func TestLostUnsyncedIndexWrites(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, PackSize: 64 << 10}
	s := openStore(t, cfg)
	want := fill(t, s, 21, 40)
	s.Close()
	s = openStore(t, cfg) // Open deleted the clean mark, synced: as after a crash
	defer s.Close()
	packsBefore := countPacks(t, dir)
	snap := filepath.Join(t.TempDir(), "index")
	copyDir(t, filepath.Join(dir, "index"), snap)
	more := fill(t, s, 22, 120)
	if st := s.Stats(); st.IndexSyncs != 0 {
		t.Fatalf("%d synced index writes for new chunks, want 0", st.IndexSyncs)
	}
	if n := countPacks(t, dir); n < packsBefore+2 {
		t.Fatalf("%d packs after the snapshot's %d: the test wants the snapshot's last pack sealed", n, packsBefore)
	}
	maps.Copy(want, more)

	lost := powerLoss(t, dir, snap)
	s2 := openStore(t, Config{Dir: lost, PackSize: 64 << 10})
	defer s2.Close()
	if s2.recovery.indexed != len(more) {
		t.Errorf("recovery indexed %d records, want the %d put after the snapshot", s2.recovery.indexed, len(more))
	}
	if s2.recovery.fullScan || s2.recovery.rebuilt {
		t.Errorf("recovery scanned every pack or rebuilt the index (%+v); the indexed lengths were enough", s2.recovery)
	}
	mustHaveAll(t, s2, want)
	mustVerify(t, s2)
	if got := s2.Stats().Chunks; got != int64(len(want)) {
		t.Errorf("%d chunks after recovery, want %d", got, len(want))
	}
}

// TestLostIndexWritesAcrossJournals covers what a single journal's prefix
// cannot: goleveldb switches journals without syncing the old one, so a
// power failure can lose entries written to the old journal and keep a
// later pack's indexed length written to the new one. The test makes that
// index (chunk entries gone, indexed lengths kept, two journals) and checks
// that Open notices the two journals, scans every pack and finds every
// chunk; it also checks that with one journal the same index would not be
// repaired, i.e. that the test makes the case it means to.
func TestLostIndexWritesAcrossJournals(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, PackSize: 64 << 10}
	s := openStore(t, cfg)
	want := fill(t, s, 31, 60)
	s.Close()
	// "Lose" the entries of a third of the chunks, keeping every indexed
	// length.
	var gone []cid.Cid
	for c := range want {
		if len(gone) == len(want)/3 {
			break
		}
		gone = append(gone, c)
	}
	withIndex(t, dir, func(db *leveldb.DB) {
		b := new(leveldb.Batch)
		for _, c := range gone {
			b.Delete(chunkKey(c.Bytes()))
		}
		b.Delete(keyClean)
		if err := db.Write(b, nil); err != nil {
			t.Fatal(err)
		}
	})
	oneJournal := t.TempDir()
	copyDir(t, filepath.Join(dir, "packs"), filepath.Join(oneJournal, "packs"))
	copyDir(t, filepath.Join(dir, "index"), filepath.Join(oneJournal, "index"))
	// An Open that saw two journals merges them when it opens the index; if
	// it stopped before its scan was done, only its marker says so.
	marked := t.TempDir()
	copyDir(t, filepath.Join(dir, "packs"), filepath.Join(marked, "packs"))
	copyDir(t, filepath.Join(dir, "index"), filepath.Join(marked, "index"))
	if err := writeMarker(filepath.Join(marked, fullScanMarker)); err != nil {
		t.Fatal(err)
	}

	// A second, newer journal: empty here, as if its writes were the
	// indexed lengths that withIndex kept.
	if err := os.WriteFile(filepath.Join(dir, "index", "999999.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, cfg)
	if !s.recovery.fullScan || s.recovery.indexed != len(gone) {
		t.Errorf("recovery %+v, want a full scan indexing %d records", s.recovery, len(gone))
	}
	mustHaveAll(t, s, want)
	mustVerify(t, s)
	s.Close()
	// goleveldb merged the journals at that Open: the next Open scans
	// nothing.
	s = openStore(t, cfg)
	if s.recovery.repaired() {
		t.Errorf("second Open repaired something: %+v", s.recovery)
	}
	mustHaveAll(t, s, want)
	s.Close()

	s = openStore(t, Config{Dir: marked, PackSize: 64 << 10})
	if !s.recovery.fullScan || s.recovery.indexed != len(gone) {
		t.Errorf("with the marker: recovery %+v, want a full scan indexing %d records", s.recovery, len(gone))
	}
	mustHaveAll(t, s, want)
	s.Close()
	if _, err := os.Stat(filepath.Join(marked, fullScanMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker outlived a finished recovery: %v", err)
	}

	s = openStore(t, Config{Dir: oneJournal, PackSize: 64 << 10})
	defer s.Close()
	for _, c := range gone {
		if ok, _ := s.Has(c); ok {
			t.Fatalf("with one journal Open found %s: the indexed lengths did not hide it, so the test does not make the case it means to", c)
		}
	}
}

// TestRenewalSynced: a Put of a chunk already held that renews its stored
// time (which keeps GC away) is synced, unlike a batch of new chunks: Open
// could not find a lost renewal in the packs.
func TestRenewalSynced(t *testing.T) {
	var now atomic.Int64
	now.Store(1_700_000_000)
	s := openStore(t, Config{Dir: t.TempDir(), Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	defer s.Close()
	c, data := randChunk(t, rand.New(rand.NewPCG(5, 5)), 4000)
	if err := s.Put(c, data); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().IndexSyncs; got != 0 {
		t.Fatalf("%d synced index writes after a new chunk, want 0", got)
	}
	if err := s.Put(c, data); err != nil { // too soon to renew: writes nothing
		t.Fatal(err)
	}
	if got := s.Stats().IndexSyncs; got != 0 {
		t.Fatalf("%d synced index writes after a Put that renews nothing, want 0", got)
	}
	now.Add(int64(2 * time.Hour / time.Second))
	if err := s.Put(c, data); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().IndexSyncs; got != 1 {
		t.Fatalf("%d synced index writes after a renewal, want 1", got)
	}
	got, err := s.Get(c)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get: %v", err)
	}
}

// TestDamagedEntryRewriteSynced: a Put of a chunk whose index entry no
// longer decodes stores the chunk afresh, and that entry's write is synced:
// Open's recovery skips a record whose key the index holds, so it could not
// re-derive the new entry from the pack after a power loss.
func TestDamagedEntryRewriteSynced(t *testing.T) {
	s := openStore(t, Config{Dir: t.TempDir()})
	defer s.Close()
	c, data := randChunk(t, rand.New(rand.NewPCG(6, 6)), 4000)
	if err := s.Put(c, data); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Put(chunkKey(c.Bytes()), []byte{0xff}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(c, data); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().IndexSyncs; got != 1 {
		t.Fatalf("%d synced index writes after storing over a damaged entry, want 1", got)
	}
	got, err := s.Get(c)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after the rewrite: %v", err)
	}
}
