package vaultdb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/protocol/member"
)

// Bytes flipped in the genesis lose every membership record (the rest no
// longer chain). Records fetched again from a peer are appended and apply;
// RewriteMembers then leaves a log that opens with no damage, and a later
// record appended to it is kept.
func TestRewriteMembersAfterDamage(t *testing.T) {
	f := newFixture()
	admin, dev, third := identity(t, 1), identity(t, 2), identity(t, 3)
	dir := t.TempDir()
	cfg := Config{Dir: dir, Vault: f.vault}
	st := member.NewState(f.vault)
	recs := []member.Record{member.Genesis(admin, f.root.VaultKey(), 1)}
	if err := st.Apply(recs[0]); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, st.Next(admin, member.Record{Op: member.OpAdd, Device: dev.ID(), Role: member.RoleMember}, 2))
	if err := st.Apply(recs[1]); err != nil {
		t.Fatal(err)
	}
	db, _ := openDB(t, cfg)
	for _, r := range recs {
		if err := db.AppendMember(r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	path := filepath.Join(dir, "member", memberFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 16; i < 24; i++ {
		data[i] ^= 0xa5
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, rep := openDB(t, cfg)
	if rep.MemberRecords != 0 || len(rep.Damage) == 0 {
		t.Fatalf("damaged open: got %d records, damage %v; want 0 records and damage", rep.MemberRecords, rep.Damage)
	}
	for _, r := range recs { // what a peer sends again
		if err := db.AppendMember(r); err != nil {
			t.Fatalf("appending a refetched record: %v", err)
		}
	}
	if err := db.RewriteMembers(); err != nil {
		t.Fatal(err)
	}
	next := st.Next(admin, member.Record{Op: member.OpAdd, Device: third.ID(), Role: member.RoleMember}, 3)
	if err := db.AppendMember(next); err != nil {
		t.Fatalf("appending after the rewrite: %v", err)
	}
	db.Close()

	db, rep = openDB(t, cfg)
	defer db.Close()
	if len(rep.Damage) != 0 || len(rep.Truncated) != 0 || rep.MemberDropped != 0 || rep.MemberRecords != 3 {
		t.Fatalf("reopen after the rewrite: got %+v, want 3 records and nothing to repair", rep)
	}
	if s := db.MemberState(); !s.IsMember(dev.ID()) || !s.IsMember(third.ID()) {
		t.Fatal("members missing after the rewrite")
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}
