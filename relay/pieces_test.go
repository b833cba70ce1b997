package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
)

// testPieceParams cut a list of a few dozen chunks into several pieces
// (2 to 8 chunks each), where DefaultPieceParams would need thousands.
var testPieceParams = entry.PieceParams{Direct: 4, Min: 2, Max: 8, Mask: 3}

// names returns n chunk names tag0 ... tag(n-1).
func names(tag string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(tag, i)
	}
	return out
}

// bigFile is a file version at path made of the named chunks, listed in
// pieces (testPieceParams), as a device writes a file of more than Direct
// chunks. The pieces' bytes go into f.chunks beside the chunks', so
// deliver hands the relay both. It returns the version and its pieces'
// CIDs, in file order.
func (f *vaultFixture) bigFile(path string, sup []entry.VersionID, chunkNames ...string) (entry.Version, []cid.Cid) {
	f.t.Helper()
	v := entry.Version{Path: path, Kind: entry.KindFile, Mode: 0o644, MTime: 1, Supersedes: sup}
	refs := make([]entry.ChunkRef, len(chunkNames))
	for i, n := range chunkNames {
		refs[i] = entry.ChunkRef{CID: f.chunk(n), Size: 1000}
		v.Size += 1000
	}
	v.Hash = blake3.Sum256([]byte(fmt.Sprint(chunkNames)))
	listed, pieces := entry.SplitChunks(refs, testPieceParams)
	if len(pieces) < 2 {
		f.t.Fatalf("%d chunks cut into %d pieces, want several", len(refs), len(pieces))
	}
	v.Chunks = listed
	ids := make([]cid.Cid, len(pieces))
	for i, p := range pieces {
		f.chunks[p.CID] = p.Bytes
		ids[i] = p.CID
	}
	return v, ids
}

// chunkCIDs is the CIDs of the named chunks.
func (f *vaultFixture) chunkCIDs(chunkNames ...string) []cid.Cid {
	out := make([]cid.Cid, len(chunkNames))
	for i, n := range chunkNames {
		out[i] = f.chunk(n)
	}
	return out
}

// deliverAll delivers until the relay wants nothing the devices have: a
// delivery of pieces makes their chunks wanted. Each round stores at least
// one blob, so it ends within a round per blob written.
func (f *vaultFixture) deliverAll(skip ...cid.Cid) {
	f.t.Helper()
	for range len(f.chunks) + 1 {
		before := f.rep.chunks.Stats().Chunks
		f.deliver(skip...)
		if f.rep.chunks.Stats().Chunks == before {
			return
		}
	}
	f.t.Fatal("deliveries keep storing blobs: more rounds than blobs written")
}

// wantSet is what the replica wants, sorted by CID for comparing.
func (f *vaultFixture) wantSet() []cid.Cid {
	return sortCIDs(f.rep.wantList(1 << 20))
}

func sortCIDs(cs []cid.Cid) []cid.Cid {
	out := slices.Clone(cs)
	slices.SortFunc(out, func(a, b cid.Cid) int { return bytes.Compare(a.Bytes(), b.Bytes()) })
	return slices.CompactFunc(out, cid.Cid.Equals)
}

func cidsEqual(a, b []cid.Cid) bool {
	return slices.EqualFunc(sortCIDs(a), sortCIDs(b), cid.Cid.Equals)
}

// TestPiecesFetchedThenChunks: for a version that lists pieces the relay
// first wants the pieces, then, as each is stored, the chunks it lists;
// the entry counts held only once every piece and every chunk is stored.
// A later version that shares pieces and chunks wants only what is new.
func TestPiecesFetchedThenChunks(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	a := f.a.ID()
	cs := names("c", 40)
	v, pieces := f.bigFile("big.bin", nil, cs...)
	ids := f.write(f.a, histStart, v)
	if got := f.wantSet(); !cidsEqual(got, pieces) {
		t.Fatalf("wanted after the entry: got %d CIDs, want its %d pieces and nothing else", len(got), len(pieces))
	}

	// The first piece arrives: its chunks are wanted, the other pieces
	// still are, nothing is held.
	first, err := entry.DecodePiece(pieces[0], f.chunks[pieces[0]])
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rep.putChunk(pieces[0], f.chunks[pieces[0]]); err != nil {
		t.Fatalf("putChunk of a piece: %v", err)
	}
	f.rep.settle()
	want := slices.Clone(pieces[1:])
	for _, r := range first {
		want = append(want, r.CID)
	}
	if got := f.wantSet(); !cidsEqual(got, want) {
		t.Fatalf("wanted after the first piece: got %d CIDs, want the other %d pieces and the first's %d chunks", len(got), len(pieces)-1, len(first))
	}
	if got := f.held()[a]; got != 0 {
		t.Fatalf("held with pieces missing: got %d, want 0", got)
	}

	// Every piece and every chunk but one: still not held, and the one
	// chunk is all that is wanted.
	last := f.chunk(cs[len(cs)-1])
	f.deliverAll(last)
	if got := f.wantSet(); !cidsEqual(got, []cid.Cid{last}) {
		t.Fatalf("wanted with one chunk missing: got %v, want [%s]", got, last)
	}
	if got := f.held()[a]; got != 0 {
		t.Fatalf("held with a chunk of a piece missing: got %d, want 0", got)
	}
	f.deliverAll()
	if got := f.held()[a]; got != 1 {
		t.Fatalf("held with every piece and chunk stored: got %d, want 1", got)
	}
	if got := f.wantSet(); len(got) != 0 {
		t.Fatalf("wanted once held: got %v, want nothing", got)
	}
	f.checkConverges()

	// A new version changes the last two chunks: the relay wants only the
	// pieces that changed and the two new chunks.
	cs2 := append(slices.Clone(cs[:38]), "n0", "n1")
	v2, pieces2 := f.bigFile("big.bin", ids, cs2...)
	var newPieces []cid.Cid
	for _, p := range pieces2 {
		if !slices.ContainsFunc(pieces, p.Equals) {
			newPieces = append(newPieces, p)
		}
	}
	if len(newPieces) == 0 || len(newPieces) == len(pieces2) {
		t.Fatalf("edit at the end changed %d of %d pieces, want some but not all", len(newPieces), len(pieces2))
	}
	f.write(f.a, histStart.Add(time.Hour), v2)
	if got := f.wantSet(); !cidsEqual(got, newPieces) {
		t.Fatalf("wanted after the edit: got %d CIDs, want its %d new pieces", len(got), len(newPieces))
	}
	f.deliver()
	if got, want := f.wantSet(), f.chunkCIDs("n0", "n1"); !cidsEqual(got, want) {
		t.Fatalf("wanted after the new pieces: got %v, want the 2 new chunks", got)
	}
	f.deliverAll()
	if got := f.held()[a]; got != 2 {
		t.Fatalf("held after the edit arrived: got %d, want 2", got)
	}
	f.checkConverges()
}

// TestPiecesRestartMidway: a relay restarted with every piece stored and
// only some of their chunks still wants exactly the rest (it reads the
// stored pieces at start), does not count the entry held, and does once
// they arrive; restarted again, it counts it held at once.
func TestPiecesRestartMidway(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	a := f.a.ID()
	cs := names("r", 30)
	v, pieces := f.bigFile("big.bin", nil, cs...)
	f.write(f.a, histStart, v)
	f.deliver() // the pieces
	if got := f.wantSet(); !cidsEqual(got, f.chunkCIDs(cs...)) {
		t.Fatalf("wanted after the pieces: got %d CIDs, want the %d chunks", len(got), len(cs))
	}
	for _, n := range cs[:10] {
		c := f.chunk(n)
		if err := f.rep.putChunk(c, f.chunks[c]); err != nil {
			t.Fatal(err)
		}
	}
	f.rep.settle()

	f.reopen()
	if got := f.wantSet(); !cidsEqual(got, f.chunkCIDs(cs[10:]...)) {
		t.Fatalf("wanted after a restart: got %d CIDs, want the %d chunks not stored", len(got), len(cs)-10)
	}
	for _, p := range pieces {
		if !f.has(p) {
			t.Fatalf("piece %s lost by the restart", p)
		}
	}
	if got := f.held()[a]; got != 0 {
		t.Fatalf("held after a restart with chunks missing: got %d, want 0", got)
	}
	f.deliverAll()
	if got := f.held()[a]; got != 1 {
		t.Fatalf("held once the rest arrived: got %d, want 1", got)
	}

	f.reopen()
	if got := f.held()[a]; got != 1 {
		t.Fatalf("held after a restart with everything stored: got %d, want 1", got)
	}
	if got := f.wantSet(); len(got) != 0 {
		t.Fatalf("wanted after a restart with everything stored: got %v, want nothing", got)
	}
}

// TestPiecesGC: a live version's pieces and the chunks they list survive
// collections; once it is superseded and past retention, the pieces and
// the chunks only it needs are dropped, while those the new version shares
// stay. A version put back after its pieces were collected wants them (and
// then their chunks) again.
func TestPiecesGC(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	cs := names("g", 40)
	v1, pieces1 := f.bigFile("big.bin", nil, cs...)
	ids1 := f.write(f.a, histStart, v1)
	f.deliverAll()
	if res := f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(400*oneDay)); res.Dropped != 0 || res.Pieces != len(pieces1) || res.Live != len(pieces1)+len(cs) {
		t.Fatalf("collection of a live version: got %d dropped, %d pieces and %d blobs live; want 0, %d, %d",
			res.Dropped, res.Pieces, res.Live, len(pieces1), len(pieces1)+len(cs))
	}
	for _, c := range append(slices.Clone(pieces1), f.chunkCIDs(cs...)...) {
		if !f.has(c) {
			t.Fatalf("%s collected from a live version", c)
		}
	}
	f.checkConverges()

	// v2 replaces the last chunks; v1 is kept while retention says so.
	cs2 := append(slices.Clone(cs[:36]), "h0", "h1", "h2", "h3")
	v2, pieces2 := f.bigFile("big.bin", ids1, cs2...)
	ids2 := f.write(f.a, histStart.Add(time.Hour), v2)
	f.deliverAll()
	if res := f.collect(Retention{}, histStart.Add(10*oneDay)); res.Dropped != 0 {
		t.Fatalf("collection within KeepAll: got %d dropped, want 0", res.Dropped)
	}

	// Past retention, v1's own pieces and chunks go, shared ones stay.
	res := f.collect(Retention{}, histStart.Add(400*oneDay))
	var gone []cid.Cid
	for _, p := range pieces1 {
		if !slices.ContainsFunc(pieces2, p.Equals) {
			gone = append(gone, p)
		}
	}
	gone = append(gone, f.chunkCIDs(cs[36:]...)...)
	if res.Dropped != len(gone) {
		t.Errorf("collection past retention: got %d dropped, want %d (v1's own pieces and chunks)", res.Dropped, len(gone))
	}
	for _, c := range gone {
		if f.has(c) {
			t.Errorf("%s, which only expired v1 needs, still stored", c)
		}
	}
	for _, c := range append(slices.Clone(pieces2), f.chunkCIDs(cs2...)...) {
		if !f.has(c) {
			t.Errorf("%s, which head v2 needs, collected", c)
		}
	}
	if got := f.held()[f.a.ID()]; got != 2 {
		t.Errorf("held after the collection: got %d, want 2", got)
	}
	f.checkConverges()

	// The file deleted and past retention: everything goes.
	f.write(f.a, histStart.Add(401*oneDay), deletionOf("big.bin", ids2...))
	f.collect(Retention{}, histStart.Add(800*oneDay))
	if n := f.rep.chunks.Stats().Chunks; n != 0 {
		t.Errorf("after the deletion expired: %d blobs stored, want 0", n)
	}

	// v1 put back: its pieces are wanted, then their chunks, and it is
	// held once all are back.
	f.write(f.a, histStart.Add(801*oneDay), v1)
	if got := f.wantSet(); !cidsEqual(got, pieces1) {
		t.Fatalf("wanted after putting v1 back: got %d CIDs, want its %d pieces", len(got), len(pieces1))
	}
	f.deliverAll()
	if got := f.held()[f.a.ID()]; got != 4 {
		t.Fatalf("held after v1's pieces and chunks are back: got %d, want 4", got)
	}
	f.checkConverges()
}

// TestPiecesGCConcurrentIngest: collections run while versions that list
// pieces, sharing chunks and pieces with older ones, arrive and are
// delivered, under -race. Whatever the interleaving, every held head keeps
// its pieces and their chunks.
func TestPiecesGCConcurrentIngest(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	pool := names("k", 24)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := f.rep.collect(ctx, Retention{KeepAll: -1, Daily: -1}, histStart.Add(1000*oneDay)); err != nil && ctx.Err() == nil && !errors.Is(err, errQuarantined) {
				t.Errorf("collect: %v", err)
			}
		}
	}()
	var prev []entry.VersionID
	for i := range 40 {
		// A rotating window of the pool: consecutive versions share most
		// chunks, and so some pieces.
		cs := make([]string, 12)
		for j := range cs {
			cs[j] = pool[(i+j)%len(pool)]
		}
		v, _ := f.bigFile("big.bin", prev, cs...)
		prev = f.write(f.a, histStart.Add(time.Duration(i)*time.Minute), v)
		if i%3 == 0 {
			f.deliverAll()
		}
	}
	cancel()
	<-done
	f.deliverAll() // a collection may have dropped what a later entry wanted again
	f.checkConverges()
	if got, want := f.held()[f.a.ID()], uint64(40); got != want {
		t.Errorf("held of A: got %d, want %d", got, want)
	}
}

// TestPiecesScrub: a piece corrupted on the relay's disk is found by the
// scrub like a chunk (and a good piece is not called corrupt), the
// versions listing it stop counting held, and the relay wants it again;
// once it is back so is the prefix. The same for a chunk a piece lists.
func TestPiecesScrub(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	a := f.a.ID()
	cs := names("s", 30)
	v, pieces := f.bigFile("big.bin", nil, cs...)
	f.write(f.a, histStart, v)
	f.write(f.a, histStart.Add(time.Minute), f.file("small", nil, "s-small"))
	f.deliverAll()
	if got := f.held()[a]; got != 2 {
		t.Fatalf("held before any rot: got %d, want 2", got)
	}
	res, err := f.rep.chunks.ScrubPass(context.Background(), 0)
	if err != nil || len(res.Corrupt) != 0 || res.Checked != len(pieces)+len(cs)+1 {
		t.Fatalf("scrub of a sound store: checked %d, corrupt %v, %v; want %d checked, none corrupt",
			res.Checked, res.Corrupt, err, len(pieces)+len(cs)+1)
	}

	for _, lost := range []struct {
		name string
		c    cid.Cid
	}{{"piece", pieces[1]}, {"chunk listed by a piece", f.chunk(cs[17])}} {
		grown := f.rep.growthSignal()
		f.flipChunk(lost.c)
		res, err := f.rep.chunks.ScrubPass(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Corrupt) != 1 || !res.Corrupt[0].Equals(lost.c) {
			t.Fatalf("%s: scrub found %v, want [%s]", lost.name, res.Corrupt, lost.c)
		}
		if got := f.held()[a]; got != 0 {
			t.Errorf("%s: held after the quarantine: got %d, want 0", lost.name, got)
		}
		if !isClosed(grown) {
			t.Errorf("%s: log streams not woken", lost.name)
		}
		if got := f.wantSet(); !cidsEqual(got, []cid.Cid{lost.c}) {
			t.Errorf("%s: wanted after the quarantine: got %v, want [%s]", lost.name, got, lost.c)
		}
		f.deliverAll()
		if got := f.held()[a]; got != 2 {
			t.Errorf("%s: held after it was put again: got %d, want 2", lost.name, got)
		}
		f.checkConverges()
	}

	// A stopped relay's home scrubbed offline (weft relay scrub without
	// --metrics): the next start wants what was quarantined, a piece or a
	// chunk a stored piece lists, and does not count the entry held.
	for _, lost := range []cid.Cid{pieces[0], f.chunk(cs[3])} {
		f.flipChunk(lost)
		f.rep.close()
		rep, err := ScrubHome(context.Background(), f.home, nil, slog.New(slog.DiscardHandler))
		if err != nil || rep.Err() != nil {
			t.Fatalf("ScrubHome: %v, %v", err, rep.Err())
		}
		if len(rep.Vaults) != 1 || len(rep.Vaults[0].Corrupt) != 1 || rep.Vaults[0].Corrupt[0] != lost.String() {
			t.Fatalf("ScrubHome report: got %+v, want %s corrupt", rep.Vaults, lost)
		}
		f.open(Quota{})
		if got := f.held()[a]; got != 0 {
			t.Errorf("held after a restart without %s: got %d, want 0", lost, got)
		}
		if got := f.wantSet(); !cidsEqual(got, []cid.Cid{lost}) {
			t.Errorf("wanted after a restart without %s: got %v, want it alone", lost, got)
		}
		f.deliverAll()
		if got := f.held()[a]; got != 2 {
			t.Errorf("held after %s was put again: got %d, want 2", lost, got)
		}
	}
}

// TestPieceRefusedWhenHostile: a piece whose bytes do not hash to its
// CID, one that lists a piece, and one that is not canonical CBOR are
// refused without being stored, and stay wanted for a good copy.
func TestPieceRefusedWhenHostile(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v, pieces := f.bigFile("big.bin", nil, names("x", 20)...)
	// Piece bytes listing a piece (the first of v), with the CID of those
	// bytes: [1, [[piece CID, 1000]]].
	nested := pieceBytes(pieces[0].Bytes(), 1000)
	// The same reference with its size as a two-byte integer where one
	// byte would do: not canonical.
	loose := append([]byte{0x82, 0x01, 0x81, 0x82, 0x58, 0x24}, f.chunk("x0").Bytes()...)
	loose = append(loose, 0x19, 0x00, 0x10)
	bad := []entry.Version{
		{Path: "nested", Kind: entry.KindFile, Mode: 0o644, MTime: 1, Size: 1000, Chunks: []entry.ChunkRef{{CID: entry.CIDOf(nested), Size: 1000}}},
		{Path: "loose", Kind: entry.KindFile, Mode: 0o644, MTime: 1, Size: 16, Chunks: []entry.ChunkRef{{CID: entry.CIDOf(loose), Size: 16}}},
	}
	f.write(f.a, histStart, append([]entry.Version{v}, bad...)...)
	tests := []struct {
		name string
		c    cid.Cid
		data []byte
		want error
	}{
		{"bytes of another piece", pieces[0], f.chunks[pieces[1]], entry.ErrPieceMismatch},
		{"a piece truncated", pieces[0], f.chunks[pieces[0]][:len(f.chunks[pieces[0]])-1], entry.ErrPieceMismatch},
		{"a piece listing a piece", entry.CIDOf(nested), nested, entry.ErrMalformed},
		{"a piece not canonical", entry.CIDOf(loose), loose, entry.ErrNonCanonical},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.rep.putChunk(tt.c, tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("putChunk: got %v, want %v", err, tt.want)
			}
			if f.has(tt.c) {
				t.Fatalf("hostile piece stored")
			}
			if !f.wants(tt.c) {
				t.Fatalf("piece no longer wanted after a hostile copy")
			}
		})
	}
	if n := f.rep.chunks.Stats().Chunks; n != 0 {
		t.Fatalf("%d blobs stored after hostile pieces only, want 0", n)
	}
	if got := f.held()[f.a.ID()]; got != 0 {
		t.Fatalf("held: got %d, want 0", got)
	}
}

// pieceBytes is a one-reference piece [1, [[ref, size]]] in canonical
// CBOR, with whatever ref says: how a hostile author makes a piece the
// encoder would not.
func pieceBytes(ref []byte, size uint16) []byte {
	b := []byte{0x82, 0x01, 0x81, 0x82, 0x58, byte(len(ref))}
	b = append(b, ref...)
	return append(b, 0x19, byte(size>>8), byte(size))
}

// TestPiecesQuota: piece bytes count against a vault's byte quota like
// chunk bytes, and a piece over the quota is not stored.
func TestPiecesQuota(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v, pieces := f.bigFile("big.bin", nil, names("q", 20)...)
	f.write(f.a, histStart, v)
	var pieceBytes int64
	for _, p := range pieces {
		pieceBytes += int64(len(f.chunks[p]))
	}
	f.deliver()
	if got := f.rep.status().Bytes; got != uint64(pieceBytes) {
		t.Fatalf("bytes with the pieces stored: got %d, want %d (the pieces')", got, pieceBytes)
	}

	g := newVaultFixture(t, Quota{Bytes: uint64(len(f.chunks[pieces[0]]))})
	g.write(g.a, histStart, v)
	for c, b := range f.chunks {
		g.chunks[c] = b
	}
	if err := g.rep.putChunk(pieces[0], g.chunks[pieces[0]]); err != nil {
		t.Fatalf("a piece within the quota: %v", err)
	}
	if err := g.rep.putChunk(pieces[1], g.chunks[pieces[1]]); !errors.Is(err, ErrQuota) {
		t.Fatalf("a piece over the quota: got %v, want ErrQuota", err)
	}
	if g.has(pieces[1]) || !g.rep.status().Full {
		t.Fatalf("piece over the quota stored (%v) or status not full", g.has(pieces[1]))
	}
}

// TestPieceHeldCheckWithoutCache: the held check works when the piece
// cache has forgotten a piece (more pieces in flight than it holds): the
// piece is read again from the store outside the replica's lock, and the
// entry counts held once every chunk is there.
func TestPieceHeldCheckWithoutCache(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v, pieces := f.bigFile("big.bin", nil, names("u", 40)...)
	f.write(f.a, histStart, v)
	f.deliver()                     // the pieces
	f.rep.pieces = newPieceCache(1) // forgets every piece but the last read
	f.deliverAll()
	if got := f.held()[f.a.ID()]; got != 1 {
		t.Fatalf("held with a cache of one reference: got %d, want 1", got)
	}
	f.rep.mu.Lock()
	done := 0
	for _, p := range pieces {
		if f.rep.pieceDone[p] {
			done++
		}
	}
	unnoted := len(f.rep.unnoted)
	f.rep.mu.Unlock()
	if done != len(pieces) || unnoted != 0 {
		t.Fatalf("got %d of %d pieces done, %d unnoted; want all done, none unnoted", done, len(pieces), unnoted)
	}
}

// TestPieceCacheBound: the piece cache holds at most its bound of
// references, dropping the least recently used piece first.
func TestPieceCacheBound(t *testing.T) {
	pc := newPieceCache(10)
	refs := func(n int) []cid.Cid { return make([]cid.Cid, n) }
	ids := make([]cid.Cid, 4)
	for i := range ids {
		ids[i] = entry.CIDOf([]byte{byte(i)})
	}
	pc.put(ids[0], refs(4))
	pc.put(ids[1], refs(4))
	if _, ok := pc.get(ids[0]); !ok { // ids[0] is now the most recent
		t.Fatal("piece 0 not cached")
	}
	pc.put(ids[2], refs(4)) // 12 > 10: ids[1], least recently used, goes
	if _, ok := pc.get(ids[1]); ok {
		t.Error("piece 1 still cached over the bound")
	}
	for _, i := range []int{0, 2} {
		if _, ok := pc.get(ids[i]); !ok {
			t.Errorf("piece %d dropped, want kept", i)
		}
	}
	pc.put(ids[3], refs(20)) // larger than the bound alone: kept, the rest go
	if _, ok := pc.get(ids[3]); !ok || pc.n != 20 || pc.lru.Len() != 1 {
		t.Errorf("after an oversized piece: cached %v, %d refs in %d pieces; want it alone", ok, pc.n, pc.lru.Len())
	}
}

// TestPiecesNotedDuringGC: an entry stored while a collection runs names
// pieces that are stored but, with the version that last named them
// expired, not live in the collection's scan. Either the relay checks
// their chunks before the drop (they are then live: nothing is dropped),
// or the drop comes between the entry's noting and the reading of pieces
// the cache had forgotten (its notePending): the drop takes the chunks,
// and the pieces are read again after it, so their chunks are wanted.
// Either way the entry counts held only with every chunk stored.
func TestPiecesNotedDuringGC(t *testing.T) {
	for _, dropFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop before the pieces are read %v", dropFirst), func(t *testing.T) {
			f := newVaultFixture(t, Quota{})
			cs := names("d", 24)
			v1, pieces := f.bigFile("big.bin", nil, cs...)
			ids := f.write(f.a, histStart, v1)
			f.deliverAll()
			del := f.write(f.a, histStart.Add(time.Hour), deletionOf("big.bin", ids...))
			v3 := v1 // v1 put back
			v3.Supersedes = del
			f.rep.testOnlyBeforeDrop = func() {
				f.rep.testOnlyBeforeDrop = nil
				if !dropFirst {
					f.write(f.a, histStart.Add(400*oneDay), v3)
					return
				}
				// ingestEntry up to its notePending, with a cache that
				// forgot the pieces.
				f.rep.pieces = newPieceCache(1)
				e := f.build(f.a, histStart.Add(400*oneDay), v3)
				if err := f.rep.db.Append(e); err != nil {
					t.Fatal(err)
				}
				f.rep.gcBar.RLock()
				f.rep.mu.Lock()
				f.rep.noteLocked(e)
				f.rep.advanceLocked()
				f.rep.mu.Unlock()
				f.rep.gcBar.RUnlock()
			}
			res := f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(400*oneDay))
			for _, p := range pieces {
				if !f.has(p) {
					t.Errorf("piece %s, named by an entry stored during the collection, dropped", p)
				}
			}
			held := f.held()[f.a.ID()]
			if dropFirst {
				if res.Dropped != len(cs) {
					t.Errorf("dropped %d, want the %d chunks no scanned live version needed", res.Dropped, len(cs))
				}
				if got := f.wantSet(); !cidsEqual(got, f.chunkCIDs(cs...)) {
					t.Errorf("wanted after the collection: got %d CIDs, want the %d chunks it dropped", len(got), len(cs))
				}
				if held != 2 {
					t.Errorf("held with the put-back version's chunks dropped: got %d, want 2", held)
				}
			} else {
				if res.Dropped != 0 {
					t.Errorf("dropped %d, want 0: the noted pieces' chunks are live", res.Dropped)
				}
				if held != 3 {
					t.Errorf("held: got %d, want 3", held)
				}
			}
			f.deliverAll()
			if got := f.held()[f.a.ID()]; got != 3 {
				t.Errorf("held once delivered: got %d, want 3", got)
			}
			f.checkConverges()
		})
	}
}

// BenchmarkHeldCheckLargeFile measures what settle repeats each time the
// chunk an author's first unheld entry is blocked on arrives: read that
// entry from the log and check it, here an entry with one version of
// 100,000 chunks (about 6 GiB) whose last chunk is missing. Listed chunk by
// chunk the entry is about 4 MB to read and every chunk is looked up;
// listed in pieces (DefaultPieceParams) it is a few KB, and the check looks
// up one mark per complete piece and the references of the incomplete one.
func BenchmarkHeldCheckLargeFile(b *testing.B) {
	const n = 100_000
	for _, pieced := range []bool{false, true} {
		b.Run(fmt.Sprintf("pieces=%v", pieced), func(b *testing.B) {
			f := newVaultFixture(b, Quota{})
			refs := make([]entry.ChunkRef, n)
			for i := range refs {
				var d [32]byte
				copy(d[:], fmt.Sprint(i))
				refs[i] = entry.ChunkRef{CID: cidOfDigest(d), Size: 64 << 10}
			}
			v := entry.Version{Path: "big.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1, Size: n * 64 << 10, Chunks: refs}
			var pieces []entry.Piece
			if pieced {
				v.Chunks, pieces = entry.SplitChunks(refs, entry.DefaultPieceParams())
			}
			f.write(f.a, histStart, v)
			for _, p := range pieces {
				if err := f.rep.putChunk(p.CID, p.Bytes); err != nil {
					b.Fatal(err)
				}
			}
			e, err := f.rep.db.Get(f.a.ID(), 1)
			if err != nil {
				b.Fatal(err)
			}
			f.rep.mu.Lock()
			defer f.rep.mu.Unlock()
			// Every chunk stored but the last: the state the fetch loop
			// reaches, with the complete pieces marked and the last one
			// (put last) in the cache.
			f.rep.wanted = newWantSet()
			f.rep.wanted.add(refs[n-1].CID)
			for _, p := range pieces[:max(len(pieces)-1, 0)] {
				f.rep.pieceDone[p.CID] = true
			}
			if held, missing := f.rep.entryHeldLocked(e); held || !missing.Equals(refs[n-1].CID) {
				b.Fatalf("held check: got %v, %s; want blocked on the last chunk", held, missing)
			}
			b.ResetTimer()
			for b.Loop() {
				// What settle does once the chunk the author was blocked
				// on arrives: read the entry again and check it.
				delete(f.rep.blockedOn, f.a.ID())
				if f.rep.advanceLocked() {
					b.Fatal("held prefix moved")
				}
			}
		})
	}
}

// cidOfDigest is the chunk CID with digest d: a chunk reference without a
// chunk, for benchmarks that store none.
func cidOfDigest(d [32]byte) cid.Cid {
	c, err := cid.Cast(append([]byte{0x01, 0x55, 0x1e, 0x20}, d[:]...))
	if err != nil {
		panic(err)
	}
	return c
}
