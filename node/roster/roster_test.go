package roster

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// memLog keeps records in memory; fail makes the next append fail, as a
// full disk would.
type memLog struct {
	recs []member.Record
	fail error
}

func (l *memLog) AppendMember(r member.Record) error {
	if l.fail != nil {
		return l.fail
	}
	l.recs = append(l.recs, r)
	return nil
}

func newIdentity(t *testing.T) *keys.Identity {
	t.Helper()
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// newVault is a vault created by admin: its roster and the log under it.
func newVault(t *testing.T, admin *keys.Identity) (*Roster, *memLog, keys.RootSecret) {
	t.Helper()
	root, err := keys.GenerateRootSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	g := member.Genesis(admin, root.VaultKey(), t0.UnixMilli())
	st := member.NewState(root.Vault().ID)
	if err := st.Apply(g); err != nil {
		t.Fatal(err)
	}
	log := &memLog{recs: []member.Record{g}}
	return New(admin, root.Secrets(), st, log, func() time.Time { return t0 }), log, root
}

// TestRosterChanges: only an admin changes the membership; every change
// is stored before it counts; a failed store changes nothing; a member
// the admin revokes is no longer one, its entries up to the kept head
// still are accepted and later ones are not.
func TestRosterChanges(t *testing.T) {
	admin, dev := newIdentity(t), newIdentity(t)
	r, log, root := newVault(t, admin)

	if _, err := r.Admit(dev.ID(), "", ""); err != nil {
		t.Fatalf("admit: %v", err)
	}
	if !r.IsMember(dev.ID()) || len(log.recs) != 2 || r.Seq() != log.recs[1].Seq {
		t.Fatalf("after admit: member %v, %d records stored, seq %d", r.IsMember(dev.ID()), len(log.recs), r.Seq())
	}

	// The new member's own roster, from the records: it may not change
	// the membership.
	st := member.NewState(root.Vault().ID)
	for _, rec := range r.Records() {
		if err := st.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	mine := New(dev, root.Secrets(), st, &memLog{}, func() time.Time { return t0 })
	if _, err := mine.Change(member.Record{Op: member.OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/1/p2p/x"}); !errors.Is(err, ErrNotAdmin) {
		t.Fatalf("a member's change: %v, want ErrNotAdmin", err)
	}
	if _, err := mine.Revoke(admin.ID(), 0); !errors.Is(err, ErrNotAdmin) {
		t.Fatalf("a member's revocation: %v, want ErrNotAdmin", err)
	}

	// A store that fails leaves the membership as it was.
	log.fail = errors.New("no space left on device")
	if _, err := r.Revoke(dev.ID(), 3); err == nil || !r.IsMember(dev.ID()) {
		t.Fatalf("revoke with a failing log: err %v, still member %v; want an error and no change", err, r.IsMember(dev.ID()))
	}
	log.fail = nil

	if _, err := r.Revoke(admin.ID(), 0); !errors.Is(err, ErrRevokeSelf) {
		t.Fatalf("revoking self: %v", err)
	}
	rec, err := r.Revoke(dev.ID(), 3)
	if err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if r.IsMember(dev.ID()) || !r.IsRevoked(dev.ID()) || rec.Epoch != 1 {
		t.Fatalf("after revoke: member %v, revoked %v, epoch %d", r.IsMember(dev.ID()), r.IsRevoked(dev.ID()), rec.Epoch)
	}
	if err := r.CheckAuthor(dev.ID(), 3); err != nil {
		t.Errorf("an entry the revocation keeps: %v", err)
	}
	if err := r.CheckAuthor(dev.ID(), 4); err == nil {
		t.Errorf("an entry after the revocation was accepted")
	}
	if got := r.Accepted(dev.ID(), 9); got != 3 {
		t.Errorf("Accepted(9) = %d, want the kept head 3", got)
	}
	if got := r.Accepted(admin.ID(), 9); got != 9 {
		t.Errorf("Accepted of a member = %d, want 9", got)
	}
	if secrets, err := r.EpochSecrets(); err != nil || len(secrets) != 2 {
		t.Errorf("the admin's epoch secrets: %d, %v; want epochs 0 and 1", len(secrets), err)
	}
}

// TestRosterIngest: a record from a peer is stored and applied once; one
// already held is dropped without a decode; garbage is an error.
func TestRosterIngest(t *testing.T) {
	admin, dev := newIdentity(t), newIdentity(t)
	src, _, root := newVault(t, admin)
	if _, err := src.Admit(dev.ID(), "", ""); err != nil {
		t.Fatal(err)
	}
	recs := src.Records()

	st := member.NewState(root.Vault().ID)
	if err := st.Apply(recs[0]); err != nil {
		t.Fatal(err)
	}
	log := &memLog{}
	r := New(dev, root.Secrets(), st, log, func() time.Time { return t0 })
	if r.IsMember(dev.ID()) || !r.Lost() {
		t.Fatalf("before its admission arrives the device is lost: member %v, lost %v", r.IsMember(dev.ID()), r.Lost())
	}
	got, err := r.Ingest(recs[1].Encode())
	if err != nil || got == nil || got.Op != member.OpAdd {
		t.Fatalf("ingesting the admission: %+v, %v", got, err)
	}
	if !r.IsMember(dev.ID()) || r.Lost() || len(log.recs) != 1 {
		t.Fatalf("after the admission: member %v, lost %v, %d stored", r.IsMember(dev.ID()), r.Lost(), len(log.recs))
	}
	if got, err := r.Ingest(recs[1].Encode()); err != nil || got != nil || len(log.recs) != 1 {
		t.Fatalf("the same record again: %+v, %v, %d stored; want dropped", got, err, len(log.recs))
	}
	if _, err := r.Ingest([]byte("not a record")); err == nil {
		t.Fatal("garbage was ingested")
	}
}

// TestRosterMatch: a member is named by its ID or a unique prefix, with
// or without the common "12D3KooW".
func TestRosterMatch(t *testing.T) {
	admin := newIdentity(t)
	r, _, _ := newVault(t, admin)
	id := admin.ID().String()
	for _, s := range []string{id, id[:12], id[8:16], " " + id + " "} {
		if d, err := r.Match(s); err != nil || d != admin.ID() {
			t.Errorf("Match(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := r.Match("zzzz"); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("no such device: %v", err)
	}
	if _, err := r.Match(""); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("empty: %v", err)
	}
}

// TestRosterNoticesAFork: two admins each sign a record on the same head;
// each roster keeps its own and notices the other's as a fork. The same
// record again, and a record that is not valid there, are no fork.
func TestRosterNoticesAFork(t *testing.T) {
	admin, second := newIdentity(t), newIdentity(t)
	a, _, root := newVault(t, admin)
	if _, err := a.Admit(second.ID(), "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Change(member.Record{Op: member.OpSetRole, Device: second.ID(), Role: member.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	st := member.NewState(root.Vault().ID)
	for _, rec := range a.Records() {
		if err := st.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	b := New(second, root.Secrets(), st, &memLog{}, func() time.Time { return t0 })
	if got, err := b.Ingest(a.Records()[2].Encode()); err != nil || got != nil || b.Fork() != nil {
		t.Fatalf("a held record again: %v, %v, fork %+v", got, err, b.Fork())
	}
	// Both sign seq 4 at once.
	ra, err := a.Change(member.Record{Op: member.OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/1/p2p/x"})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Change(member.Record{Op: member.OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/2/p2p/y"})
	if err != nil {
		t.Fatal(err)
	}
	forged := ra
	forged.Relay = "/ip4/127.0.0.1/tcp/3/p2p/z" // signature no longer valid
	if _, err := b.Ingest(forged.Encode()); err != nil || b.Fork() != nil {
		t.Fatalf("an invalid record at a held seq: %v, fork %+v", err, b.Fork())
	}
	// A record at that sequence number signed by a device that is no
	// admin here (a member's own rename, which nobody holds) is no fork.
	member3 := newIdentity(t)
	if _, err := a.Admit(member3.ID(), "", ""); err != nil {
		t.Fatal(err)
	}
	stm := member.NewState(root.Vault().ID)
	for _, rec := range a.Records()[:3] {
		if err := stm.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	bogus := stm.Next(member3, member.Record{Op: member.OpRename, Device: member3.ID(), Name: "x"}, 1)
	if _, err := b.Ingest(bogus.Encode()); err != nil || b.Fork() != nil {
		t.Fatalf("a member's record at a held seq: %v, fork %+v", err, b.Fork())
	}
	if _, err := b.Ingest(ra.Encode()); err != nil {
		t.Fatal(err)
	}
	f := b.Fork()
	if f == nil || f.Seq != 4 || f.Held.CID() != rb.CID() || f.Other.CID() != ra.CID() {
		t.Fatalf("fork: %+v", f)
	}
	if b.Seq() != 4 || b.Relays()[0] != rb.Relay {
		t.Fatalf("the held record must stand: seq %d, relays %v", b.Seq(), b.Relays())
	}
}
