package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
	if !v.adoptionOwed() {
		t.Fatal("the own log grew since the last pass, and no adoption is owed")
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
	v.tookBack(v.db.Head(n.ID()).Seq + 1)
	if !v.adoptionOwed() {
		t.Fatal("own entries taken back from a peer, and no adoption is owed")
	}
}
