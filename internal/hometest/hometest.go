package hometest

import (
	"bytes"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// SyncLog is a log writer, safe for concurrent use, that keeps what was
// written for a failure report.
type SyncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *SyncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *SyncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// InitVault is enrol.InitVault (this package cannot import node: node's own
// tests use it).
type InitVault func(h *home.Home, folder, name string, now time.Time, relays ...string) (keys.RootSecret, home.Vault, error)

// PairHomes makes two homes under dir that are members of one vault: a
// creates it with initVault, b is added by a's signed record (what pairing
// would record, without a network round trip: for tests whose devices
// cannot reach each other until something else, a relay or the DHT, brings
// them together).
func PairHomes(t *testing.T, initVault InitVault, dir string) (a, b *home.Home) {
	t.Helper()
	var err error
	if a, err = home.Open(filepath.Join(dir, "a", "home")); err != nil {
		t.Fatal(err)
	}
	if b, err = home.Open(filepath.Join(dir, "b", "home")); err != nil {
		t.Fatal(err)
	}
	root, hva, err := initVault(a, filepath.Join(dir, "a", "folder"), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ida, err := a.Identity()
	if err != nil {
		t.Fatal(err)
	}
	idb, err := b.Identity()
	if err != nil {
		t.Fatal(err)
	}
	dba, _, err := vaultdb.Open(hva.DBDir(), hva.ID)
	if err != nil {
		t.Fatal(err)
	}
	records := dba.MemberRecords()
	st := member.NewState(hva.ID)
	for _, r := range records {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	add := st.Next(ida, member.Record{Op: member.OpAdd, Device: idb.ID(), Role: member.RoleMember}, time.Now().UnixMilli())
	if err := dba.AppendMember(add); err != nil {
		t.Fatal(err)
	}
	if err := dba.Close(); err != nil {
		t.Fatal(err)
	}
	hvb, err := b.AddVault(root.Secrets(), filepath.Join(dir, "b", "folder"))
	if err != nil {
		t.Fatal(err)
	}
	dbb, _, err := vaultdb.Open(hvb.DBDir(), hvb.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(records, add) {
		if err := dbb.AppendMember(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := dbb.Close(); err != nil {
		t.Fatal(err)
	}
	return a, b
}
