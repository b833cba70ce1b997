package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/store/vaultdb"
)

// A vault database whose index is lost (a damaged or missing goleveldb is
// rebuilt from the logs at open; the folder records are gone) must not make
// the next scan author every file again: each item whose content is its
// path's head is adopted as that head. A real edit afterwards is still
// recorded.
func TestRebuiltIndexAuthorsNothing(t *testing.T) {
	ctx := context.Background()
	h, folderPath := testHome(t)
	open := func() *Node { return openWithoutRun(t, h) }
	closeNode := func(n *Node) {
		n.closeVaults()
		n.host.Close()
	}
	write := func(rel, content string, mode os.FileMode) {
		p := filepath.Join(folderPath, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "alpha", 0o644)
	write("sub/b.txt", "beta", 0o644)
	write("run.sh", "#!/bin/sh\n", 0o755)
	if err := os.Symlink("a.txt", filepath.Join(folderPath, "link")); err != nil {
		t.Fatal(err)
	}

	n := open()
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	me := n.ID()
	seq := v.db.Head(me).Seq
	before := map[string]vaultdb.Record{}
	v.mu.Lock()
	for p, r := range v.index.All() {
		before[p] = r
	}
	v.mu.Unlock()
	if len(before) != 5 || seq == 0 {
		t.Fatalf("first scan: %d index records, own head %d; want 5 and > 0", len(before), seq)
	}
	closeNode(n)

	hvs, err := h.Vaults()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(hvs[0].DBDir(), "index")); err != nil {
		t.Fatal(err)
	}
	n = open()
	defer closeNode(n)
	v = n.vaultsNow()[0]
	v.mu.Lock()
	left := v.index.Len()
	v.mu.Unlock()
	if left != 0 {
		t.Fatalf("after losing the index, %d folder records remain; the test wants none", left)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(me).Seq; got != seq {
		t.Errorf("the rescan after a rebuilt index authored entries: own head %d, want %d", got, seq)
	}
	v.mu.Lock()
	for p, want := range before {
		if got, ok := v.index.Get(p); !ok || got.Version != want.Version {
			t.Errorf("%s: index version %v (held %v), want %v adopted", p, got.Version, ok, want.Version)
		}
	}
	v.mu.Unlock()

	// A real edit is recorded as before, as is a new exec bit.
	write("a.txt", "alpha, edited", 0o644)
	if err := os.Chmod(filepath.Join(folderPath, "sub/b.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(me).Seq; got != seq+1 {
		t.Errorf("an edit after the rescan: own head %d, want %d", got, seq+1)
	}
}
