package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/entry"
)

// TestSevenGiBFileSyncs (WEFT_BIG=1 only, docs/benchmarks.md "Files of
// any size"): a 7 GiB file, over what one entry could list before pieces
// (about 5.9 GiB), syncs end to end with the default piece parameters. The
// file is sparse with 1 MiB of random bytes every 256 MiB, so it is quick
// to make and to send (its zero chunks deduplicate) while its chunk list
// is full length; B writes all 7 GiB. It needs about 8 GiB of free disk.
func TestSevenGiBFileSyncs(t *testing.T) {
	if os.Getenv("WEFT_BIG") != "1" {
		t.Skip("set WEFT_BIG=1 to sync a 7 GiB file (minutes, 8 GiB of disk)")
	}
	const size = 7 << 30
	a, folderA := testNodeWith(t, Config{})
	hb, folderB, _ := joinHome(t, a)
	b, _ := startNode(t, hb)

	// Written under another name and renamed, so no scan sees it half made.
	tmp := filepath.Join(folderA, ".big.part")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var marks [][]byte
	for off := int64(0); off < size; off += 256 << 20 {
		m := make([]byte, 1<<20)
		if _, err := rand.Read(m); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(m, off+12_345); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, m)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(folderA, "disk.img")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("A scanned 7 GiB in %s", time.Since(start).Round(time.Millisecond))

	vA, vB := a.vaultsNow()[0], b.vaultsNow()[0]
	vA.mu.Lock()
	recA, ok := vA.index["disk.img"]
	vA.mu.Unlock()
	if !ok {
		t.Fatal("A did not record disk.img (too large?)")
	}
	waitUntil(t, 30*time.Minute, func() error {
		vB.mu.Lock()
		defer vB.mu.Unlock()
		if r, ok := vB.index["disk.img"]; !ok || r.Hash != recA.Hash {
			return os.ErrNotExist
		}
		return nil
	})
	t.Logf("B has it %s after the scan began", time.Since(start).Round(time.Millisecond))
	es := entriesOf(t, vB, a.id.ID(), 1)
	e := es[len(es)-1]
	if e.Format() != entry.FormatV2 || len(e.Bytes()) > 64<<10 {
		t.Fatalf("the version's entry: format %d, %d bytes; want format 2 and small", e.Format(), len(e.Bytes()))
	}
	g, err := os.Open(filepath.Join(folderB, "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if st, err := g.Stat(); err != nil || st.Size() != size {
		t.Fatalf("B's copy: %v, %v", st, err)
	}
	for i, m := range marks {
		got := make([]byte, len(m))
		if _, err := g.ReadAt(got, int64(i)*(256<<20)+12_345); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if !bytes.Equal(got, m) {
			t.Fatalf("B's copy differs at block %d", i)
		}
	}
}
