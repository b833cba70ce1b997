package node

import (
	"crypto/rand"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// servePieces answers the chunk protocol on h with the given pieces.
func servePieces(h host.Host, vault keys.VaultID, pieces []entry.Piece) {
	h.SetStreamHandler(ProtoChunk, func(s network.Stream) {
		defer s.Close()
		if _, _, err := wire.ReadFrame(s, wire.MaxFrameSize); err != nil {
			return
		}
		_ = wire.WriteFrame(s, wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: vault}.AppendBinary(nil))
		for {
			_, p, err := wire.ReadFrame(s, wire.MaxFrameSize)
			if err != nil {
				return
			}
			want, err := wire.ParseWantChunks(p)
			if err != nil {
				return
			}
			for _, c := range want.CIDs {
				i := slices.IndexFunc(pieces, func(pc entry.Piece) bool { return pc.CID.Equals(c) })
				if i < 0 {
					_ = wire.WriteFrame(s, wire.MsgChunkMissing, wire.ChunkMissing{CID: c}.AppendBinary(nil))
					continue
				}
				_ = wire.WriteFrame(s, wire.MsgChunk, wire.Chunk{CID: c, Envelope: pieces[i].Bytes}.AppendBinary(nil))
			}
		}
	})
}

// TestHostilePieceSizesRefused: a member's signed entry whose piece
// references claim other sizes than the pieces' chunks hold is refused as
// an invalid entry (the stream ends, the event says so), and nothing of it
// is stored, though its pieces themselves are well formed and served.
func TestHostilePieceSizesRefused(t *testing.T) {
	n, _ := testNode(t)
	h, id := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	refs := make([]entry.ChunkRef, 40)
	for i := range refs {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		refs[i] = entry.ChunkRef{CID: chunk.SumCID(b), Size: 64 << 10}
	}
	listed, pieces := entry.SplitChunks(refs, piecedTestParams)
	if len(listed) < 2 {
		t.Fatalf("%d pieces", len(listed))
	}
	lie := slices.Clone(listed)
	lie[0].Size += 1000 // the sum still matches the file's size
	lie[1].Size -= 1000
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 1, Keys: v.ek, Time: 1, Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "big.bin", Kind: entry.KindFile, Mode: 0o644, MTime: 1,
			Size: uint64(len(refs)) * 64 << 10, Hash: blake3.Sum256([]byte("x")), Chunks: lie}}})
	if err != nil {
		t.Fatal(err)
	}
	evs, stop := n.Subscribe()
	defer stop()
	servePieces(h, v.id, pieces)
	serveLog(h, v.id, []*entry.Entry{e}, nil)
	connectHost(t, h, n)
	waitInvalidEntry(t, evs, "the entry with lying piece sizes")
	if got := v.db.Head(id.ID()).Seq; got != 0 {
		t.Fatalf("stored %d of the hostile member's entries, want 0", got)
	}
}
