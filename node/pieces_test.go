package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/home"
)

// piecedTestParams cut a chunk list of a dozen MiB into a few dozen pieces,
// as the default parameters cut one of several GiB.
var piecedTestParams = entry.PieceParams{Direct: 16, Min: 4, Max: 32, Mask: 7}

// piecedPair is A (cutting chunk lists with piecedTestParams) and B, a
// device joined through a real invite, with big.bin of size random bytes
// written on A and synced to B.
type piecedPair struct {
	a, b             *Node
	folderA, folderB string
	hb               *home.Home
	hvb              home.Vault
	stopB            func()
	data             []byte
}

func newPiecedPair(t *testing.T, size int) piecedPair {
	t.Helper()
	var p piecedPair
	p.a, p.folderA = testNodeWith(t, Config{Pieces: piecedTestParams})
	p.hb, p.folderB, p.hvb = joinHome(t, p.a)
	p.b, p.stopB = startNode(t, p.hb)
	p.data = make([]byte, size)
	if _, err := rand.Read(p.data); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.folderA, "big.bin", p.data)
	if err := p.a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, p.folderB, "big.bin", p.data)
	return p
}

// TestLargeFileSyncsInPieces: a file whose chunk list is cut into pieces
// syncs, its entry is format 2 and small, each of B6's edits in its middle
// (1 MiB overwritten at an unaligned offset, 1 MiB inserted, 1,000,000
// bytes inserted) costs B at most 1.5 / 2 / 2 MiB: the edit's chunks and
// the few pieces around it, not the list; and B reopens its log, pieces
// included, after a restart. The counts do not depend on load.
func TestLargeFileSyncsInPieces(t *testing.T) {
	p := newPiecedPair(t, 12<<20)
	a, folderA, hb, folderB, b, stopB, data := p.a, p.folderA, p.hb, p.folderB, p.b, p.stopB, p.data

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

	// B6's three edits in the middle of the file, one after another: each
	// costs B the edit's chunks and the few pieces around it, not the
	// list, and costs A only B's requests (its own entry does not come
	// back).
	at := len(data)/2 + 12_345
	edits := []struct {
		name  string
		apply func(data, fresh []byte) []byte
		size  int
		limit int64
	}{
		{"1 MiB overwritten", func(d, f []byte) []byte { copy(d[at:], f); return d }, 1 << 20, 3 << 19},
		{"1 MiB inserted", func(d, f []byte) []byte { return append(d[:at:at], append(f, d[at:]...)...) }, 1 << 20, 2 << 20},
		{"1,000,000 bytes inserted", func(d, f []byte) []byte { return append(d[:at:at], append(f, d[at:]...)...) }, 1_000_000, 2 << 20},
	}
	prev := first
	for _, ed := range edits {
		fresh := make([]byte, ed.size)
		if _, err := rand.Read(fresh); err != nil {
			t.Fatal(err)
		}
		before := b.stats.chunkBytesFetched.Load()
		sentBefore := b.counters(self).bytesSent.Load()
		data = ed.apply(data, fresh)
		writeFile(t, folderA, "big.bin", data)
		if err := a.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFile(t, folderB, "big.bin", data)
		next := last()
		fetched := b.stats.chunkBytesFetched.Load() - before
		cost := fetched + int64(len(next.Bytes()))
		t.Logf("%s: B fetched %d bytes of chunks and pieces, the entry is %d bytes", ed.name, fetched, len(next.Bytes()))
		if cost > ed.limit {
			t.Errorf("%s: B received %d bytes, want at most %d", ed.name, cost, ed.limit)
		}
		if back := b.counters(self).bytesSent.Load() - sentBefore; back > 32<<10 {
			t.Errorf("%s: B sent A %d bytes, want only requests and status", ed.name, back)
		}
		held := map[cid.Cid]bool{}
		for _, c := range piecesOf(t, vB, prev) {
			held[c] = true
		}
		fresher := 0
		for _, c := range piecesOf(t, vB, next) {
			if !held[c] {
				fresher++
			}
		}
		if fresher < 1 || fresher > 6 {
			t.Errorf("%s: %d new pieces, want a few", ed.name, fresher)
		}
		prev = next
	}
	second := prev

	// B reopens its log (every entry expands from its stored pieces) and
	// serves the pieces to others.
	stopB()
	b2, _ := startNode(t, hb)
	vB2 := b2.vaultsNow()[0]
	for _, c := range piecesOf(t, vB2, second) {
		env, err := vB2.local.Envelope(c)
		if err != nil || verifyBlob(c, env) != nil {
			t.Fatalf("B after a restart serving piece %s: %v", c, err)
		}
	}
	vB2.mu.Lock()
	rec, ok := vB2.index.Get("big.bin")
	full, _ := vB2.view.Body(second.VersionID(0))
	vB2.mu.Unlock()
	if !ok || rec.Version != second.VersionID(0) {
		t.Fatalf("B after a restart: index %v %v, want the second version", ok, rec.Version)
	}
	if full.HasPieces() || len(full.Chunks) < 150 {
		t.Fatalf("B after a restart holds %d refs (pieces %v), want the whole chunk list", len(full.Chunks), full.HasPieces())
	}
	var off int
	for _, ref := range full.Chunks[:3] {
		env, err := vB2.local.Envelope(ref.CID)
		if err != nil {
			t.Fatalf("B after a restart re-creating chunk %s: %v", ref.CID, err)
		}
		plain, err := vB2.crypt.OpenChunk(ref.CID, env)
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
	body, err := v.crypt.OpenBody(e)
	if err != nil {
		t.Fatal(err)
	}
	return entry.PieceCIDs(&body.Versions[0])
}

// TestLostPiecesFetchedAgain: a device whose stored pieces are gone (the
// directory deleted) or rotted still opens its vault, keeps syncing the
// file's later edits, and fetches a head's missing pieces again from a
// member before it uses that version.
func TestLostPiecesFetchedAgain(t *testing.T) {
	p := newPiecedPair(t, 6<<20)
	a, folderA, hb, folderB, hvb, b, stopB, data := p.a, p.folderA, p.hb, p.folderB, p.hvb, p.b, p.stopB, p.data
	es := entriesOf(t, b.vaultsNow()[0], a.id.ID(), 1)
	first := es[len(es)-1]
	pieces := piecesOf(t, b.vaultsNow()[0], first)
	stopB()

	// One piece rots, the others are deleted.
	pdir := filepath.Join(hvb.DBDir(), "pieces")
	rotted := filepath.Join(pdir, pieces[0].String())
	raw, err := os.ReadFile(rotted)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x40
	for _, c := range pieces[1:] {
		if err := os.Remove(filepath.Join(pdir, c.String())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(rotted, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	b2, _ := startNode(t, hb) // opens: the version waits for its pieces
	vB := b2.vaultsNow()[0]
	if !vB.opened.fromSnapshot {
		t.Fatal("B's clean stop wrote no graph snapshot, or its restart ignored it: the pieces it lists are not the ones checked here")
	}
	id := first.VersionID(0)
	vB.mu.Lock()
	kept, _ := vB.view.Body(id)
	vB.mu.Unlock()
	unexpanded := kept.HasPieces()
	if !unexpanded {
		t.Fatal("B reopened without its pieces yet holds the whole chunk list")
	}
	if _, err := os.Stat(rotted + ".damaged"); err != nil {
		t.Errorf("the rotted piece was not set aside: %v", err)
	}
	waitUntil(t, 30*time.Second, func() error { return vB.repairPieces(context.Background(), "big.bin") })
	vB.mu.Lock()
	full, _ := vB.view.Body(id)
	vB.mu.Unlock()
	if full.HasPieces() || len(full.Chunks) < 50 {
		t.Fatalf("after the repair: %d refs, pieces %v", len(full.Chunks), full.HasPieces())
	}
	for _, c := range pieces {
		if _, err := vB.db.Piece(c); err != nil {
			t.Errorf("piece %s after the repair: %v", c, err)
		}
	}
	// A piece rots again while the vault runs: the next edit's entry,
	// which names it too, is not refused as the sender's fault; B sets
	// the damaged copy aside and fetches the piece again.
	lastPiece := filepath.Join(pdir, pieces[len(pieces)-1].String())
	raw, err = os.ReadFile(lastPiece)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/3] ^= 0x01
	if err := os.WriteFile(lastPiece, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	copy(data[1<<20:], bytes.Repeat([]byte("edit"), 1000))
	writeFile(t, folderA, "big.bin", data)
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, folderB, "big.bin", data)
	if _, err := vB.db.Piece(pieces[len(pieces)-1]); err != nil {
		t.Errorf("the piece that rotted again: %v", err)
	}
}

// TestEntryNotEchoedToItsAuthor: B pulls A's new entry from A and does not
// send it straight back down A's own log stream (it did: every entry went
// back to its author, the whole chunk list of a large file's version
// included, 1.29 MiB per edit of a 1 GiB file in issue 16's B6).
func TestEntryNotEchoedToItsAuthor(t *testing.T) {
	a, folderA := testNode(t)
	b, _ := joinNode(t, a)
	self := a.id.ID()
	devB := b.id.ID()
	vB := b.vaultsNow()[0]
	writeFile(t, folderA, "first.txt", []byte("B pulls from A\n"))
	if err := a.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFile(t, vB.cfg.Folder, "first.txt", []byte("B pulls from A\n"))
	from := a.vaultsNow()[0].db.Head(self).Seq + 1
	before := a.counters(devB).bytesReceived.Load()
	want := writeInlineBatch(t, a, folderA)
	waitFile(t, vB.cfg.Folder, "n299.bin", want)
	wrote := entryBytes(t, vB, self, from)
	got := a.counters(devB).bytesReceived.Load() - before
	t.Logf("A wrote entries of %d bytes; B sent A %d bytes meanwhile", wrote, got)
	if wrote < 800_000 {
		t.Fatalf("precondition: entries of %d bytes, want the 300 files' 900 KB", wrote)
	}
	if got > int64(wrote)/4 {
		t.Errorf("B sent A %d bytes for A's own entries of %d, want only its status", got, wrote)
	}
}

// writeInlineBatch writes 300 random files of 3,000 bytes (inline, so
// about 900 KB of entries) into folder and has n record them; it returns
// the last file's bytes (n299.bin).
func writeInlineBatch(t *testing.T, n *Node, folder string) []byte {
	t.Helper()
	var last []byte
	for i := range 300 {
		last = make([]byte, 3000)
		if _, err := rand.Read(last); err != nil {
			t.Fatal(err)
		}
		writeFile(t, folder, fmt.Sprintf("n%03d.bin", i), last)
	}
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return last
}

// entryBytes is the size of author's entries that v holds from seq from.
func entryBytes(t *testing.T, v *vault, author keys.DeviceID, from uint64) int {
	t.Helper()
	n := 0
	for _, e := range entriesOf(t, v, author, from) {
		n += len(e.Bytes())
	}
	return n
}
