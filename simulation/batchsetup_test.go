package simulation

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/store/vaultdb"
)

// TestBatchSetupRecordsWhatPairingWould: every device of a batch-built
// cluster holds the same membership log, in which every device is a member
// admitted by the admin, and the nodes then sync over it.
func TestBatchSetupRecordsWhatPairingWould(t *testing.T) {
	const n = 5
	c, err := NewCluster(ClusterConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AddDevicesBatch(n-1, time.Now()); err != nil {
		t.Fatal(err)
	}
	var want []member.Record
	for i := range n {
		d := c.Device(i)
		db, _, err := vaultdb.Open(d.hv.DBDir(), c.Vault)
		if err != nil {
			t.Fatal(err)
		}
		got := db.MemberRecords()
		st := db.MemberState()
		db.Close()
		if len(got) != n {
			t.Fatalf("d%d: got %d membership records, want %d", i, len(got), n)
		}
		if i == 0 {
			want = got
		}
		for j := range got {
			if !bytes.Equal(got[j].Encode(), want[j].Encode()) {
				t.Fatalf("d%d: record %d differs from the admin's", i, j)
			}
		}
		for j := range n {
			if !st.IsMember(c.Device(j).ID) {
				t.Fatalf("d%d: got d%d not a member, want a member", i, j)
			}
		}
		if role, _ := st.Role(c.Device(0).ID); role != member.RoleAdmin {
			t.Fatalf("d%d: got admin role %v, want %v", i, role, member.RoleAdmin)
		}
	}
	for i := range n {
		if err := c.AddEdge(i, (i+1)%n); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if err := c.Start(c.Device(i)); err != nil {
			t.Fatal(err)
		}
	}
	c.ConnectEdges(context.Background())
	want0 := []byte("from the admin\n")
	if err := writeFile(c.Device(0).FS, "a.txt", want0); err != nil {
		t.Fatal(err)
	}
	if err := c.Device(0).Node().Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for i := 1; i < n; i++ {
		for {
			if b, ok := readFile(c.Device(i).FS, "a.txt"); ok && bytes.Equal(b, want0) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("d%d: got no a.txt, want the admin's", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if os.Getenv("SIM_SHOW_DIR") != "" {
		t.Log(c.cfg.Dir)
	}
}
