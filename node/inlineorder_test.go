package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/store/vaultdb"
)

// TestSmallFilesApplyInLogOrder: a backlog of small files whose entries
// interleave in path order (each scan wrote every eighth file), larger
// than the inline cache, is applied reading each entry back from the log
// at most once. In path order each file read a whole entry of 512 files
// again: 4,096 reads for 8 entries.
func TestSmallFilesApplyInLogOrder(t *testing.T) {
	ctx := context.Background()
	h, folderPath := testHome(t)
	open := func() *Node { return openWithoutRun(t, h) }
	const rounds, perRound = 8, 512 // 16 MiB of 4,000-byte files: twice the cache
	content := func(k int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%05d ", k)), 4000/6) }
	name := func(k int) string { return fmt.Sprintf("f%05d.md", k) }
	n := open()
	for r := range rounds {
		for i := range perRound {
			k := i*rounds + r
			if err := os.WriteFile(filepath.Join(folderPath, name(k)), content(k), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	v := n.vaultsNow()[0]
	entries := v.db.Head(n.id.ID()).Seq
	if entries < rounds {
		t.Fatalf("precondition: %d entries for %d scans", entries, rounds)
	}
	n.stopVaults() // with a graph snapshot: the next start reads no entry back
	n.host.Close()

	// The folder emptied and its index forgotten, as if never applied.
	for k := range rounds * perRound {
		if err := os.Remove(filepath.Join(folderPath, name(k))); err != nil {
			t.Fatal(err)
		}
	}
	hvs, err := h.Vaults()
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := vaultdb.Open(hvs[0].DBDir(), hvs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	u := &vaultdb.Update{}
	for k := range rounds * perRound {
		u.DeleteIndex(name(k))
	}
	if err := db.Commit(u); err != nil {
		t.Fatal(err)
	}
	db.Close()

	n = open()
	defer func() { n.stopVaults(); n.host.Close() }()
	v = n.vaultsNow()[0]
	v.rec.Pass(ctx)
	for k := range rounds * perRound {
		got, err := os.ReadFile(filepath.Join(folderPath, name(k)))
		if err != nil || !bytes.Equal(got, content(k)) {
			t.Fatalf("%s after the apply: %d bytes, %v", name(k), len(got), err)
		}
	}
	if reads := v.view.Inline.Reads.Load(); reads > int64(entries) {
		t.Errorf("applying %d files read %d entries back from the log, want at most the %d entries", rounds*perRound, reads, entries)
	}
}
