package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/entry"
)

// TestNineGiBFileSyncs (WEFT_BIG=1 only, `make big`; docs/benchmarks.md
// "Files of any size"): a 9 GiB file, over what one entry could list
// before pieces (about 5.9 GiB) and over one entry's reference limit
// (entry.MaxRefs, 8 GiB of 64 KiB chunks: the folder record was bound by
// it and refused a 12 GiB file), syncs end to end with the default piece
// parameters. The file is a 64 MiB block of random bytes repeated, with
// its offset stamped at the start of each copy, so it is quick to make
// and to send (its chunks deduplicate) while its chunk list has the
// length and shape of real data (about 147,000 content-defined chunks).
// B writes all 9 GiB. It needs about 19 GiB of free disk and minutes.
func TestNineGiBFileSyncs(t *testing.T) {
	if os.Getenv("WEFT_BIG") != "1" {
		t.Skip("set WEFT_BIG=1 to sync a 9 GiB file (minutes, 19 GiB of disk)")
	}
	const (
		size  = 9 << 30
		block = 64 << 20
	)
	a, folderA := testNodeWith(t, Config{})
	hb, folderB, _ := joinHome(t, a)
	b, _ := startNode(t, hb)

	// Written outside the folder and moved in, so no scan sees it half made.
	tmp := filepath.Join(t.TempDir(), "big.part")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	base := make([]byte, block)
	if _, err := rand.Read(base); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < size; off += block {
		binary.BigEndian.PutUint64(base, uint64(off)) // each copy starts differently
		if _, err := f.WriteAt(base, off); err != nil {
			t.Fatal(err)
		}
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
	t.Logf("A scanned 9 GiB in %s", time.Since(start).Round(time.Millisecond))

	vA, vB := a.vaultsNow()[0], b.vaultsNow()[0]
	vA.mu.Lock()
	recA, ok := vA.index.Get("disk.img")
	vA.mu.Unlock()
	if !ok {
		t.Fatal("A did not record disk.img (too large?)")
	}
	waitUntil(t, 30*time.Minute, func() error {
		vB.mu.Lock()
		defer vB.mu.Unlock()
		if r, ok := vB.index.Get("disk.img"); !ok || r.Hash != recA.Hash {
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
	pieces := piecesOf(t, vB, e)
	vB.mu.Lock()
	full, _ := vB.view.Body(e.VersionID(0))
	vB.mu.Unlock()
	if len(full.Chunks) <= entry.MaxRefs {
		t.Fatalf("%d chunks, want more than one entry could list (%d)", len(full.Chunks), entry.MaxRefs)
	}
	g, err := os.Open(filepath.Join(folderB, "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if st, err := g.Stat(); err != nil || st.Size() != size {
		t.Fatalf("B's copy: %v, %v", st, err)
	}
	got := make([]byte, block)
	for _, off := range []int64{0, size / 2, size - block} {
		if _, err := g.ReadAt(got, off); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint64(base, uint64(off))
		if !bytes.Equal(got, base) {
			t.Fatalf("B's copy differs in the block at %d", off)
		}
	}
	t.Logf("the version lists %d chunks in %d pieces", len(full.Chunks), len(pieces))
}
