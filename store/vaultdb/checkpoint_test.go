package vaultdb

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/protocol/entry"
)

// reopen closes db and opens cfg again, returning the new DB and its report.
func reopen(t *testing.T, db *DB, cfg Config) (*DB, OpenReport) {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openDB(t, cfg)
}

// TestCheckpointTrustsCleanPrefix: after a clean Close every entry is in the
// checkpointed prefix, so the next Open holds them all without checking a
// signature; entries appended after the reopen join the prefix at the next
// Close. Several segments, two authors.
func TestCheckpointTrustsCleanPrefix(t *testing.T) {
	f := newFixture()
	a, b := identity(t, 1), identity(t, 2)
	ea := f.chain(t, a, entry.Head{}, 30)
	eb := f.chain(t, b, entry.Head{}, 10)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault, SegmentSize: int64(8 * len(appendFrame(nil, ea[0].Bytes())))}
	db, rep := openDB(t, cfg)
	if rep.Trusted != 0 {
		t.Fatalf("new database: got %d trusted, want 0", rep.Trusted)
	}
	if err := db.Append(ea[:20]...); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(eb...); err != nil {
		t.Fatal(err)
	}
	db, rep = reopen(t, db, cfg)
	if rep.Trusted != 30 || rep.Entries != 30 || rep.CheckpointError != "" || rep.Dropped != 0 {
		t.Fatalf("clean reopen: got %+v, want 30 entries, all trusted", rep)
	}
	if segs, _ := listSegments(OSFS{}, filepath.Join(dir, "log")); len(segs) < 3 {
		t.Fatalf("got %d segments, want several (the test is wrong)", len(segs))
	}
	if err := db.Append(ea[20:]...); err != nil {
		t.Fatal(err)
	}
	db, rep = reopen(t, db, cfg)
	defer db.Close()
	if rep.Trusted != 40 || rep.Entries != 40 {
		t.Fatalf("reopen after appends: got %+v, want 40 entries, all trusted", rep)
	}
	mustHold(t, db, append(append([]*entry.Entry(nil), ea...), eb...))
}

// copyTree copies the regular files under src to dst: the state a crash
// would leave of a DB that is still open (every answered Append is fsynced).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointAfterCrash: without a clean Close, the entries appended
// since the last checkpoint are verified in full, the ones before are
// still trusted, and the Open that verified them records them.
func TestCheckpointAfterCrash(t *testing.T) {
	f := newFixture()
	es := f.chain(t, identity(t, 1), entry.Head{}, 15)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	db.Append(es[:10]...)
	db, _ = reopen(t, db, cfg)
	db.Append(es[10:]...)
	crashed := t.TempDir()
	copyTree(t, dir, crashed)
	db.Close()

	ccfg := Config{Dir: crashed, Vault: f.vault}
	db, rep := openDB(t, ccfg)
	if rep.Trusted != 10 || rep.Entries != 15 {
		t.Fatalf("after a crash: got %+v, want 15 entries, 10 trusted", rep)
	}
	mustHold(t, db, es)
	// A second crash: the Open above saved what it verified.
	again := t.TempDir()
	copyTree(t, crashed, again)
	db.Close()
	db, rep = openDB(t, Config{Dir: again, Vault: f.vault})
	defer db.Close()
	if rep.Trusted != 15 {
		t.Fatalf("after a second crash: got %+v, want all 15 trusted", rep)
	}
}

// rewriteRecord replaces the payload of the k-th record of segment 1 with
// payload of the same length, framed with a valid CRC: what only someone
// writing the file on purpose, or a checksum collision, could do.
func rewriteRecord(t *testing.T, dir string, k int, payload []byte) {
	t.Helper()
	path := segPath(dir, 1)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	i := 0
	scanFrames(data, func(_ int64, _ int, p []byte) {
		if i == k {
			if len(payload) != len(p) {
				t.Fatalf("payload of %d bytes, record of %d", len(payload), len(p))
			}
			p = payload
		}
		out = appendFrame(out, p)
		i++
	})
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointTamperedPrefix: an entry inside the checkpointed prefix
// whose bytes changed (a valid frame, a broken signature) is not trusted:
// the segment no longer matches the checkpoint, so it is verified in full
// and the entry is dropped (with the ones after it, which no longer
// chain). The checkpoint then saved ends before the bad record, so it stays
// dropped at every later Open.
func TestCheckpointTamperedPrefix(t *testing.T) {
	f := newFixture()
	es := f.chain(t, identity(t, 1), entry.Head{}, 10)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	db.Append(es...)
	db.Close()
	bad := bytes.Clone(es[3].Bytes())
	bad[len(bad)-1] ^= 1 // the signature's last byte
	rewriteRecord(t, dir, 3, bad)

	for round := range 2 {
		db, rep := openDB(t, cfg)
		wantTrusted := []int{0, 3}[round]
		if rep.Trusted != wantTrusted || rep.Entries != 3 || rep.Dropped != 7 {
			t.Fatalf("open %d: got %+v, want 3 held (%d trusted), 7 dropped", round, rep, wantTrusted)
		}
		mustHold(t, db, es[:3])
		db.Close()
	}
}

// TestCheckpointDoesNotCoverDropped: a bad record after the checkpointed
// prefix (appended by something other than Append) is verified, dropped,
// and never enters a checkpoint, whatever is appended after it.
func TestCheckpointDoesNotCoverDropped(t *testing.T) {
	f := newFixture()
	es := f.chain(t, identity(t, 1), entry.Head{}, 4)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	db.Append(es[:2]...)
	db.Close()
	bad := bytes.Clone(es[2].Bytes())
	bad[len(bad)-1] ^= 1
	fh, err := os.OpenFile(segPath(dir, 1), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write(appendFrame(nil, bad))
	fh.Close()

	db, rep := openDB(t, cfg)
	if rep.Trusted != 2 || rep.Dropped != 1 || rep.Entries != 2 {
		t.Fatalf("first open: got %+v, want 2 trusted, 1 dropped", rep)
	}
	if err := db.Append(es[2:]...); err != nil { // the genuine entries, after the bad record
		t.Fatal(err)
	}
	for round := range 2 {
		db, rep = reopen(t, db, cfg)
		if rep.Trusted != 2 || rep.Dropped != 1 || rep.Entries != 4 {
			t.Fatalf("reopen %d: got %+v, want 4 held, 2 trusted, 1 dropped", round, rep)
		}
	}
	mustHold(t, db, es)
	db.Close()
}

// TestCheckpointUnusable: a damaged checkpoint, one of another vault, and
// one claiming more than a segment holds are ignored with a reason (the
// log is verified in full), and the Open replaces them.
func TestCheckpointUnusable(t *testing.T) {
	f := newFixture()
	es := f.chain(t, identity(t, 1), entry.Head{}, 5)
	tests := []struct {
		name    string
		mut     func(t *testing.T, path string)
		wantErr bool
	}{
		{"flipped byte", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 1
			os.WriteFile(path, b, 0o600)
		}, true},
		{"truncated", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)-1], 0o600)
		}, true},
		{"another vault", func(t *testing.T, path string) {
			c, _ := decodeCheckpoint(mustRead(t, path))
			c.vault[0] ^= 1
			os.WriteFile(path, encodeCheckpoint(c), 0o600)
		}, true},
		{"longer than the segment", func(t *testing.T, path string) {
			c, _ := decodeCheckpoint(mustRead(t, path))
			c.segs[0].size++
			os.WriteFile(path, encodeCheckpoint(c), 0o600)
		}, false},
		{"wrong CRC of the segment", func(t *testing.T, path string) {
			c, _ := decodeCheckpoint(mustRead(t, path))
			c.segs[0].crc ^= 1
			os.WriteFile(path, encodeCheckpoint(c), 0o600)
		}, false},
		{"removed", func(t *testing.T, path string) { os.Remove(path) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Dir: dir, Vault: f.vault}
			db, _ := openDB(t, cfg)
			db.Append(es...)
			db.Close()
			tt.mut(t, filepath.Join(dir, checkpointName))
			db, rep := openDB(t, cfg)
			if rep.Trusted != 0 || rep.Entries != 5 || rep.Dropped != 0 || (rep.CheckpointError != "") != tt.wantErr {
				t.Fatalf("got %+v, want 5 entries verified in full, checkpoint error %v", rep, tt.wantErr)
			}
			db, rep = reopen(t, db, cfg)
			defer db.Close()
			if rep.Trusted != 5 || rep.CheckpointError != "" {
				t.Fatalf("next open: got %+v, want all 5 trusted", rep)
			}
		})
	}
}

// TestCheckpointTornTail: a torn write after the checkpointed prefix is cut
// off and the prefix is still trusted.
func TestCheckpointTornTail(t *testing.T) {
	f := newFixture()
	es := f.chain(t, identity(t, 1), entry.Head{}, 6)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	db.Append(es[:5]...)
	db.Close()
	frame := appendFrame(nil, es[5].Bytes())
	fh, _ := os.OpenFile(segPath(dir, 1), os.O_WRONLY|os.O_APPEND, 0)
	fh.Write(frame[:len(frame)/2])
	fh.Close()
	db, rep := openDB(t, cfg)
	defer db.Close()
	if rep.Trusted != 5 || len(rep.Truncated) != 1 || rep.Entries != 5 {
		t.Fatalf("got %+v, want 5 trusted, the torn tail truncated", rep)
	}
	if err := db.Append(es[5]); err != nil {
		t.Fatal(err)
	}
	mustHold(t, db, es)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeCheckpoint: decoding arbitrary bytes never panics, and what
// decodes encodes back to the same bytes.
func FuzzDecodeCheckpoint(f *testing.F) {
	fx := newFixture()
	f.Add(encodeCheckpoint(checkpoint{vault: fx.vault}))
	f.Add(encodeCheckpoint(checkpoint{vault: fx.vault, segs: []segSum{{1, 100, 7}, {2, 5, 9}}}))
	f.Add(encodeCheckpoint(checkpoint{vault: fx.vault, segs: []segSum{{3, 1, 1}, {5, 1, 1}}}))
	f.Add([]byte("weftlck1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("error %v is not ErrBadCheckpoint", err)
			}
			return
		}
		if got := encodeCheckpoint(c); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, want %x", got, b)
		}
	})
}

// TestCheckpointNotExtendedOverBadAppend: a record damaged on disk after
// Append wrote it and before Close is not vouched for by the checkpoint
// Close writes (the next Open takes the prefix's records without their own
// checksums), so that Open still finds the damage and trusts only what
// was checked.
func TestCheckpointNotExtendedOverBadAppend(t *testing.T) {
	f := newFixture()
	es := f.chain(t, identity(t, 1), entry.Head{}, 10)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	db, _ := openDB(t, cfg)
	if err := db.Append(es[:5]...); err != nil {
		t.Fatal(err)
	}
	db, _ = reopen(t, db, cfg)
	if err := db.Append(es[5:]...); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(OSFS{}, filepath.Join(dir, "log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v: %v", segs, err)
	}
	p := filepath.Join(dir, "log", segName(segs[len(segs)-1]))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff // inside the last record's payload
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, rep := reopen(t, db, cfg)
	defer db.Close()
	if rep.Trusted != 5 || rep.Entries != 9 {
		t.Fatalf("reopen: got %+v, want 5 trusted and 9 entries (the damaged last one not held)", rep)
	}
}
