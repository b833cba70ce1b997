package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/home"
)

// piecedTestParams cut a chunk list of a dozen MiB into a few dozen pieces,
// as the default parameters cut one of several GiB.
var piecedTestParams = entry.PieceParams{Direct: 16, Min: 4, Max: 32, Mask: 7}

// TestLargeFileSyncsInPieces: a file whose chunk list is cut into pieces
// syncs, its entry is format 2 and small, a 1 MiB overwrite in its middle
// costs B the edit's chunks and the few pieces around it (not the list),
// and B reopens its log, pieces included, after a restart.
func TestLargeFileSyncsInPieces(t *testing.T) {
	a, folderA := testNodeWith(t, Config{Pieces: piecedTestParams})
	dir := t.TempDir()
	hb, err := home.Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	inv, err := a.Invite([32]byte{}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	folderB := filepath.Join(dir, "folder")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := JoinVault(ctx, hb, inv.String(), folderB); err != nil {
		t.Fatal(err)
	}
	b, stopB := startNode(t, hb)

	data := make([]byte, 12<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	writeFile(t, folderA, "big.bin", data)
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, folderB, "big.bin", data)

	self := a.id.ID()
	vB := b.vaultsNow()[0]
	last := func() *entry.Entry {
		es := entriesOf(t, vB, self, 1)
		return es[len(es)-1]
	}
	first := last()
	firstPieces := piecesOf(t, vB, first)
	if first.Format() != entry.FormatV2 || len(firstPieces) < 10 {
		t.Fatalf("entry format %d with %d pieces, want format 2 and the list in pieces", first.Format(), len(firstPieces))
	}
	if n := len(first.Bytes()); n > 16<<10 {
		t.Errorf("entry of %d bytes for a 12 MiB file, want a few KiB", n)
	}

	// Overwrite 1 MiB at an unaligned offset in the middle.
	before := b.stats.chunkBytesFetched.Load()
	sentBefore := b.counters(self).bytesSent.Load()
	edit := make([]byte, 1<<20)
	if _, err := rand.Read(edit); err != nil {
		t.Fatal(err)
	}
	copy(data[len(data)/2+12_345:], edit)
	writeFile(t, folderA, "big.bin", data)
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, folderB, "big.bin", data)
	second := last()
	fetched := b.stats.chunkBytesFetched.Load() - before
	cost := fetched + int64(len(second.Bytes()))
	t.Logf("1 MiB overwrite: B fetched %d bytes of chunks and pieces, the entry is %d bytes", fetched, len(second.Bytes()))
	if cost > 3<<19 { // 1.5 MiB
		t.Errorf("B received %d bytes for a 1 MiB overwrite, want at most 1.5 MiB", cost)
	}
	// B sends A its requests and status, not A's own entry back.
	if back := b.counters(self).bytesSent.Load() - sentBefore; back > 32<<10 {
		t.Errorf("B sent A %d bytes for A's edit, want only requests and status", back)
	}
	held := map[cid.Cid]bool{}
	for _, c := range firstPieces {
		held[c] = true
	}
	fresh := 0
	for _, c := range piecesOf(t, vB, second) {
		if !held[c] {
			fresh++
		}
	}
	if fresh < 1 || fresh > 6 {
		t.Errorf("%d new pieces for a 1 MiB edit, want a few", fresh)
	}

	// B reopens its log (every entry expands from its stored pieces) and
	// serves the pieces to others.
	stopB()
	b2, _ := startNode(t, hb)
	vB2 := b2.vaultsNow()[0]
	for _, c := range piecesOf(t, vB2, second) {
		env, err := vB2.localEnvelope(c)
		if err != nil || verifyBlob(c, env) != nil {
			t.Fatalf("B after a restart serving piece %s: %v", c, err)
		}
	}
	vB2.mu.Lock()
	rec, ok := vB2.index["big.bin"]
	full := vB2.bodies[toCoreID(second.VersionID(0))]
	vB2.mu.Unlock()
	if !ok || rec.Version != second.VersionID(0) {
		t.Fatalf("B after a restart: index %v %v, want the second version", ok, rec.Version)
	}
	if full.HasPieces() || len(full.Chunks) < 150 {
		t.Fatalf("B after a restart holds %d refs (pieces %v), want the whole chunk list", len(full.Chunks), full.HasPieces())
	}
	var off int
	for _, ref := range full.Chunks[:3] {
		env, err := vB2.localEnvelope(ref.CID)
		if err != nil {
			t.Fatalf("B after a restart re-creating chunk %s: %v", ref.CID, err)
		}
		plain, err := vB2.openChunk(ref.CID, env)
		if err != nil || !bytes.Equal(plain, data[off:off+int(ref.Size)]) {
			t.Fatalf("B after a restart: chunk at %d does not hold the file's bytes (%v)", off, err)
		}
		off += int(ref.Size)
	}
}

// piecesOf returns the pieces e's first version lists, opening its body
// with v's keys.
func piecesOf(t *testing.T, v *vault, e *entry.Entry) []cid.Cid {
	t.Helper()
	body, err := v.openBody(e)
	if err != nil {
		t.Fatal(err)
	}
	return entry.PieceCIDs(&body.Versions[0])
}
