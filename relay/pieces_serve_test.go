package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// blobServer is a fake device's side of the log and chunk protocols: it
// sends its entries to whoever opens a log stream and answers WantChunks
// from blobs, recording every CID asked for, in order.
type blobServer struct {
	vault   keys.VaultID
	entries [][]byte
	blobs   map[cid.Cid][]byte

	mu    sync.Mutex // mu guards asked
	asked []cid.Cid
}

func (b *blobServer) askedSoFar() []cid.Cid {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.asked)
}

func (b *blobServer) attach(d *testDevice) {
	d.h.SetStreamHandler(ProtoLog, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: b.vault}.AppendBinary(nil))
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		for _, e := range b.entries {
			_ = wire.WriteFrame(s, wire.MsgEntry, e)
		}
		for {
			if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
				return
			}
		}
	})
	serveChunks(d, b.vault, func(ids []cid.Cid) {
		b.mu.Lock()
		b.asked = append(b.asked, ids...)
		b.mu.Unlock()
	}, func(id cid.Cid) ([]byte, bool) {
		data, ok := b.blobs[id]
		return data, ok
	})
}

// TestRelayFetchesAndServesPieces runs a real relay and a device that
// wrote a file of 40 sealed chunks as a format-2 entry listing pieces. The
// relay asks the device for the pieces before any chunk and for each chunk
// only once it holds a piece listing it, reports the entry held once all
// are stored, and serves the entry, its pieces and their chunks to another
// member, which checks each piece with DecodePiece and each chunk with
// chunk.VerifyCID.
func TestRelayFetchesAndServesPieces(t *testing.T) {
	r := runRelay(t)
	a := newTestDevice(t)
	b := newTestDevice(t)
	x := newTestVault(t, a.id)
	x.add(t, a.id, member.Record{Op: member.OpAddRelay, Relay: r.Addrs()[0]})
	x.add(t, a.id, member.Record{Op: member.OpAdd, Device: b.id.ID(), Role: member.RoleMember})

	srv := &blobServer{vault: x.id, blobs: map[cid.Cid][]byte{}}
	var refs []entry.ChunkRef
	var whole []byte
	for range 40 {
		plain := make([]byte, 2<<10)
		if _, err := rand.Read(plain); err != nil {
			t.Fatal(err)
		}
		sealed, err := chunk.Seal(chunk.KeysFrom(x.ek), plain)
		if err != nil {
			t.Fatal(err)
		}
		srv.blobs[sealed.CID] = sealed.Envelope
		refs = append(refs, entry.ChunkRef{CID: sealed.CID, Size: uint32(len(plain))})
		whole = append(whole, plain...)
	}
	listed, pieces := entry.SplitChunks(refs, testPieceParams)
	if len(pieces) < 3 {
		t.Fatalf("40 chunks cut into %d pieces, want several", len(pieces))
	}
	pieceOf := map[cid.Cid]cid.Cid{} // chunk -> the piece listing it
	for _, p := range pieces {
		srv.blobs[p.CID] = p.Bytes
		for _, ref := range p.Refs {
			pieceOf[ref.CID] = p.CID
		}
	}
	e, err := entry.New(entry.Config{Identity: a.id, Vault: x.id, Clock: 1, Keys: x.ek, Time: 1, Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "big.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1,
			Size: uint64(len(whole)), Hash: blake3.Sum256(whole), Chunks: listed}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Format() != entry.FormatV2 {
		t.Fatalf("entry format %d, want %d", e.Format(), entry.FormatV2)
	}
	srv.entries = [][]byte{e.Bytes()}
	srv.attach(a)

	a.connect(t, r)
	b.connect(t, r)
	if got := open(t, a, r, ProtoRelay, enrollFrame(t, x.id, x.encoded())); got.typ != wire.MsgRelayStatus {
		t.Fatalf("enrolling: got %s %v, want RelayStatus", got.typ, got.err)
	}
	waitUntil(t, "the relay to hold the entry", func() bool {
		rep := r.replica(x.id)
		return rep != nil && rep.heldVector()[a.id.ID()] == 1
	})
	rep := r.replica(x.id)
	for c := range srv.blobs {
		if ok, err := rep.chunks.Has(c); err != nil || !ok {
			t.Fatalf("held, but %s not stored (%v)", c, err)
		}
	}

	// The order of the asks: every piece before any chunk (the entry names
	// only pieces), and each chunk after the piece listing it.
	asked := srv.askedSoFar()
	firstAsk := map[cid.Cid]int{}
	for i, c := range asked {
		if _, ok := firstAsk[c]; !ok {
			firstAsk[c] = i
		}
	}
	for _, p := range pieces {
		if _, ok := firstAsk[p.CID]; !ok {
			t.Fatalf("piece %s never asked for", p.CID)
		}
	}
	for c, p := range pieceOf {
		i, ok := firstAsk[c]
		if !ok {
			t.Fatalf("chunk %s never asked for", c)
		}
		if i < firstAsk[p] {
			t.Errorf("chunk %s asked for (ask %d) before its piece %s (ask %d)", c, i, p, firstAsk[p])
		}
	}
	if !entry.IsPieceCID(asked[0]) {
		t.Errorf("first ask %s is not a piece", asked[0])
	}

	// The other member gets the entry, then its pieces, then their chunks.
	entries, _ := fetchAll(t, b, r, x.id, pieces[0].CID)
	if len(entries) != 1 || !bytes.Equal(entries[0], e.Bytes()) {
		t.Fatalf("member B got %d entries, want the format-2 entry", len(entries))
	}
	got, err := entry.Decode(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	named := got.Headers()[0].Refs
	blobs := askRelay(t, b, r, x.id, named)
	var chunkIDs []cid.Cid
	for i, p := range named {
		prefs, err := entry.DecodePiece(p, blobs[i])
		if err != nil {
			t.Fatalf("piece %d served by the relay: %v", i, err)
		}
		for _, ref := range prefs {
			chunkIDs = append(chunkIDs, ref.CID)
		}
	}
	if len(chunkIDs) != len(refs) {
		t.Fatalf("served pieces list %d chunks, want %d", len(chunkIDs), len(refs))
	}
	for i, env := range askRelay(t, b, r, x.id, chunkIDs) {
		if err := chunk.VerifyCID(chunkIDs[i], env); err != nil {
			t.Fatalf("chunk %d served by the relay: %v", i, err)
		}
		if !chunkIDs[i].Equals(refs[i].CID) {
			t.Fatalf("chunk %d: got %s, want %s", i, chunkIDs[i], refs[i].CID)
		}
	}
}

// askRelay asks the relay's chunk protocol for ids as member d and returns
// what it sent, in order; a ChunkMissing fails the test.
func askRelay(t *testing.T, d *testDevice, r *Relay, v keys.VaultID, ids []cid.Cid) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := d.h.NewStream(ctx, r.ID(), ProtoChunk)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	msgs := hello(t, v)
	for i := 0; i < len(ids); i += netsync.FetchBatch {
		msgs = append(msgs, frame(t, wire.MsgWantChunks, wire.WantChunks{CIDs: ids[i:min(i+netsync.FetchBatch, len(ids))]})...)
	}
	if _, err := s.Write(msgs); err != nil {
		t.Fatal(err)
	}
	if mt, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil || mt != wire.MsgHello {
		t.Fatalf("relay's hello: got %s, %v", mt, err)
	}
	out := make([][]byte, 0, len(ids))
	for len(out) < len(ids) {
		mt, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
		if err != nil {
			t.Fatalf("reading blob %d of %d: %v", len(out), len(ids), err)
		}
		if mt != wire.MsgChunk {
			t.Fatalf("blob %d (%s): got %s, want Chunk", len(out), ids[len(out)], mt)
		}
		ch, err := wire.ParseChunk(p)
		if err != nil {
			t.Fatal(err)
		}
		if !ch.CID.Equals(ids[len(out)]) {
			t.Fatalf("blob %d: got %s, want %s", len(out), ch.CID, ids[len(out)])
		}
		out = append(out, ch.Envelope)
	}
	return out
}
