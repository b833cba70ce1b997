package vaultdb

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

func TestAppendGetRangeReopen(t *testing.T) {
	f := newFixture()
	a, b := identity(t, 1), identity(t, 2)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault, SegmentSize: 4 << 10} // forces rotation
	db, rep := openDB(t, cfg)
	if !rep.Created || !rep.NeedRescan || rep.Rebuilt {
		t.Fatalf("first open: got %+v, want Created and NeedRescan", rep)
	}
	ea := f.chain(t, a, entry.Head{}, 40)
	eb := f.chain(t, b, entry.Head{}, 7)
	if err := db.Append(ea[:20]...); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(eb[0], ea[20], eb[1]); err != nil {
		t.Fatal(err)
	}
	for _, e := range append(ea[21:], eb[2:]...) {
		if err := db.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	all := append(append([]*entry.Entry(nil), ea...), eb...)
	mustHold(t, db, all)
	var seqs []uint64
	if err := db.Range(a.ID(), 5, 8, func(e *entry.Entry) error { seqs = append(seqs, e.Seq()); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{5, 6, 7, 8}, seqs); diff != "" {
		t.Errorf("Range(5, 8) (-want +got):\n%s", diff)
	}
	if _, err := db.Get(a.ID(), 41); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get past head: got %v, want ErrNotFound", err)
	}
	if c, err := db.EntryCID(b.ID(), 3); err != nil || !c.Equals(eb[2].CID()) {
		t.Errorf("EntryCID(b, 3) = %v, %v; want %v", c, err, eb[2].CID())
	}
	if _, err := db.EntryCID(a.ID(), 41); !errors.Is(err, ErrNotFound) {
		t.Errorf("EntryCID past head: got %v, want ErrNotFound", err)
	}
	segs, _ := listSegments(OSFS{}, filepath.Join(dir, "log"))
	if len(segs) < 2 {
		t.Errorf("got %d segments, want rotation at 4 KiB", len(segs))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Append(f.next(t, a, ea[39].Head(), "x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}

	db, rep = openDB(t, cfg)
	defer db.Close()
	if rep.Created || rep.Rebuilt || rep.NeedRescan || rep.Entries != len(all) || rep.Dropped != 0 || len(rep.Damage) != 0 {
		t.Fatalf("reopen: got %+v, want a clean open of %d entries", rep, len(all))
	}
	mustHold(t, db, all)
	if err := db.Append(f.next(t, a, ea[39].Head(), "x")); err != nil {
		t.Fatalf("Append after reopen: %v", err)
	}
}

func TestAppendRejects(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	db, _ := openDB(t, Config{Dir: t.TempDir(), Vault: f.vault})
	defer db.Close()
	es := f.chain(t, a, entry.Head{}, 3)
	if err := db.Append(es[0], es[1]); err != nil {
		t.Fatal(err)
	}
	fork := f.next(t, a, es[0].Head(), "fork") // another seq 2
	other := newFixture()
	other.vault[0] ^= 1
	tests := []struct {
		name    string
		entries []*entry.Entry
		want    error
	}{
		{"gap", []*entry.Entry{f.next(t, a, es[2].Head(), "gap")}, entry.ErrSeqGap},
		{"prev mismatch", []*entry.Entry{f.next(t, a, entry.Head{Seq: 2, CID: es[0].CID(), Clock: 2}, "p")}, entry.ErrPrevMismatch},
		{"fork", []*entry.Entry{fork}, ErrFork},
		{"fork after valid entry in one call", []*entry.Entry{es[2], f.next(t, a, es[1].Head(), "fork3")}, ErrFork},
		{"wrong vault", []*entry.Entry{other.next(t, a, es[1].Head(), "v")}, entry.ErrWrongVault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := db.Append(tt.entries...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if h := db.Head(a.ID()); h.Seq != 2 {
				t.Fatalf("head: got %d, want 2 (nothing stored)", h.Seq)
			}
		})
	}
	var fe *ForkError
	if err := db.Append(fork); !errors.As(err, &fe) || fe.Proof.Verify() != nil {
		t.Fatalf("fork: got %v, want a *ForkError with a valid proof", err)
	}
	if err := db.Append(es...); err != nil {
		t.Fatalf("duplicates then a new entry: got %v, want nil", err)
	}
	if err := db.Append(es[1]); err != nil {
		t.Fatalf("duplicate: got %v, want nil", err)
	}
	if s := db.Stats(); s.Entries != 3 {
		t.Errorf("got %d entries written, want 3", s.Entries)
	}
	mustHold(t, db, es)
}

func TestUpdateCommitsWithAppend(t *testing.T) {
	f := newFixture()
	a, peer := identity(t, 1), identity(t, 9)
	dir := t.TempDir()
	db, _ := openDB(t, Config{Dir: dir, Vault: f.vault})
	es := f.chain(t, a, entry.Head{}, 2)
	rec := Record{
		Version: entry.VersionID{Author: a.ID(), Seq: 1, Index: 0}, Kind: entry.KindFile,
		Size: 3, MTime: 123, Inode: 77, Ctime: 124, Mode: 0o644, Hash: [32]byte{1},
		Chunks: []entry.ChunkRef{{CID: es[0].CID(), Size: 3}},
	}
	var u Update
	u.PutIndex("notes/a.md", rec)
	u.PutIndex("notes/b.md", Record{Kind: entry.KindSymlink, Target: "a.md", Size: 4})
	u.SetAcked(peer.ID(), a.ID(), 1)
	u.SetMeta("clock", []byte{7})
	if err := db.AppendWith(&u, es[0]); err != nil {
		t.Fatal(err)
	}
	var bad Update
	bad.PutIndex("../escape", Record{})
	if err := db.AppendWith(&bad, es[1]); !errors.Is(err, ErrBadUpdate) {
		t.Fatalf("bad path: got %v, want ErrBadUpdate", err)
	}
	if db.Head(a.ID()).Seq != 1 {
		t.Fatal("a failed AppendWith stored its entry")
	}
	var u2 Update
	u2.DeleteIndex("notes/b.md")
	u2.SetAcked(peer.ID(), a.ID(), 2)
	if err := db.Commit(&u2); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, rep := openDB(t, Config{Dir: dir, Vault: f.vault})
	defer db.Close()
	if rep.NeedRescan {
		t.Fatalf("clean reopen asks for a rescan: %+v", rep)
	}
	got, ok, err := db.IndexGet("notes/a.md")
	if err != nil || !ok {
		t.Fatalf("IndexGet: %v %v", ok, err)
	}
	if diff := cmp.Diff(rec, got, cmp.Comparer(func(x, y cid.Cid) bool { return x.Equals(y) })); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	var paths []string
	db.IndexAll(func(p string, _ Record) error { paths = append(paths, p); return nil })
	if diff := cmp.Diff([]string{"notes/a.md"}, paths); diff != "" {
		t.Errorf("IndexAll (-want +got):\n%s", diff)
	}
	acks, err := db.Acked(peer.ID())
	if err != nil || acks[a.ID()] != 2 || len(acks) != 1 {
		t.Errorf("Acked: got %v, %v; want {a: 2}", acks, err)
	}
	if v, ok, _ := db.Meta("clock"); !ok || len(v) != 1 || v[0] != 7 {
		t.Errorf("Meta(clock): got %v %v, want [7]", v, ok)
	}
}

func TestMembers(t *testing.T) {
	f := newFixture()
	admin, dev := identity(t, 1), identity(t, 2)
	dir := t.TempDir()
	db, _ := openDB(t, Config{Dir: dir, Vault: f.vault})
	st := member.NewState(f.vault)
	g := member.Genesis(admin, f.root.VaultKey(), 1)
	st.Apply(g)
	add := st.Next(admin, member.Record{Op: member.OpAdd, Device: dev.ID(), Role: member.RoleMember}, 2)
	if err := db.AppendMember(add); !errors.Is(err, member.ErrSequence) {
		t.Fatalf("record before genesis: got %v, want ErrSequence", err)
	}
	for _, r := range []member.Record{g, add, add} {
		if err := db.AppendMember(r); err != nil {
			t.Fatal(err)
		}
	}
	other := st.Next(admin, member.Record{Op: member.OpAddRelay, Relay: "/dns/r/tcp/1"}, 3)
	if err := db.AppendMember(other); !errors.Is(err, ErrFork) {
		t.Fatalf("second record with seq 2: got %v, want ErrFork", err)
	}
	db.Close()
	db, rep := openDB(t, Config{Dir: dir, Vault: f.vault})
	defer db.Close()
	if rep.MemberRecords != 2 || rep.MemberDropped != 0 {
		t.Fatalf("reopen: got %d records, %d dropped; want 2, 0", rep.MemberRecords, rep.MemberDropped)
	}
	if !db.MemberState().IsMember(dev.ID()) {
		t.Error("member added before reopen is not a member")
	}
	if recs := db.MemberRecords(); len(recs) != 2 || recs[1].CID() != add.CID() {
		t.Errorf("MemberRecords: got %d records", len(recs))
	}
}

func TestOpenLocked(t *testing.T) {
	f := newFixture()
	dir := t.TempDir()
	db, _ := openDB(t, Config{Dir: dir, Vault: f.vault})
	defer db.Close()
	if _, _, err := Open(dir, f.vault); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
}

var _ = keys.DeviceID{}

// TestOpenSegmentsBounded: reading a log of many segments, in order and
// then again and concurrently, keeps at most maxOpenSegments read handles
// open, and every read still returns its entry.
func TestOpenSegmentsBounded(t *testing.T) {
	f := newFixture()
	a := identity(t, 1)
	dir := t.TempDir()
	ea := f.chain(t, a, entry.Head{}, 60)
	cfg := Config{Dir: dir, Vault: f.vault, SegmentSize: int64(len(appendFrame(nil, ea[0].Bytes())))} // one entry a segment
	db, _ := openDB(t, cfg)
	defer db.Close()
	for _, e := range ea {
		if err := db.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if segs, _ := listSegments(OSFS{}, filepath.Join(dir, "log")); len(segs) < 3*maxOpenSegments {
		t.Fatalf("%d segments, want at least %d", len(segs), 3*maxOpenSegments)
	}
	for range 2 {
		n := 0
		if err := db.Range(a.ID(), 1, 60, func(e *entry.Entry) error {
			n++
			if e.Seq() != uint64(n) {
				return fmt.Errorf("entry %d where %d was due", e.Seq(), n)
			}
			if open := db.readers.openCount(); open > maxOpenSegments {
				return fmt.Errorf("%d segment handles open", open)
			}
			return nil
		}); err != nil || n != 60 {
			t.Fatalf("Range: %v after %d entries", err, n)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < 60; i += 4 {
				e, err := db.Get(a.ID(), uint64(i+1))
				if err != nil || e.Seq() != uint64(i+1) {
					errs <- fmt.Errorf("Get(%d): %v", i+1, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if open := db.readers.openCount(); open > maxOpenSegments {
		t.Fatalf("%d segment handles open after the reads, want at most %d", open, maxOpenSegments)
	}
}
