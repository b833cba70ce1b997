package node

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/store/vaultdb"
)

// The pass that adopts this device's own heads into the folder index runs
// at a start only when it could find something: the index was created or
// rebuilt, own entries were taken back from peers, or the own log grew
// since the last pass (an entry appended without its index update by a
// crash between the two). A restart with none of these skips the pass
// over every path.
func TestAdoptionOwed(t *testing.T) {
	h, folderPath := testHome(t)
	n := openWithoutRun(t, h)
	defer func() {
		n.closeVaults()
		n.host.Close()
	}()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(folderPath, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := n.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	v := n.vaultsNow()[0]
	write("a.txt", "alpha")
	if !v.adoptionOwed() {
		t.Fatal("a new vault's index (created at open) does not ask for adoption")
	}
	v.adoptOwnHeads()
	if v.adoptionOwed() {
		t.Fatal("adoption owed again right after a pass up to the log's head")
	}
	write("b.txt", "beta") // own log grows with its index update
	if v.adoptionOwed() {
		t.Fatal("a local change recorded with its index update owes an adoption")
	}
	// An own entry appended without its index update (taken back, or a
	// crash between the two): the recorded head falls behind.
	u := &vaultdb.Update{}
	u.SetMeta(metaOwnAdopted, binary.BigEndian.AppendUint64(nil, v.db.Head(n.ID()).Seq-1))
	if err := v.db.Commit(u); err != nil {
		t.Fatal(err)
	}
	if !v.adoptionOwed() {
		t.Fatal("the own log is past the last pass, and no adoption is owed")
	}
	write("c.txt", "gamma") // does not carry a lagging record along
	if !v.adoptionOwed() {
		t.Fatal("a later local change hid the lag")
	}
	v.adoptOwnHeads()
	if v.adoptionOwed() {
		t.Fatal("adoption owed after a second pass")
	}

	// The same database opened again: what the last pass recorded holds.
	n.closeVaults()
	n.host.Close()
	n = openWithoutRun(t, h)
	v = n.vaultsNow()[0]
	if v.adoptionOwed() {
		t.Fatal("a reopen with nothing changed owes an adoption")
	}
	v.tail.TookBack(v.db.Head(n.ID()).Seq + 1)
	if !v.adoptionOwed() {
		t.Fatal("own entries taken back from a peer, and no adoption is owed")
	}
}
