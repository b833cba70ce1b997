package wire

import (
	"github.com/ipfs/go-cid"
)

// MaxWant bounds the CIDs in one WantChunks message.
const MaxWant = 1024

// MaxEnvelope bounds a chunk envelope in a Chunk message; it fits in a frame
// with room for the CID.
const MaxEnvelope = MaxFrameSize - 256

// WantChunks is a batch of chunk CIDs the sender wants.
//
// Payload layout:
//
//	count (uvarint) | count x ( cid length (uvarint) | cid bytes )
type WantChunks struct {
	CIDs []cid.Cid
}

// AppendBinary appends the payload of w to b.
func (w WantChunks) AppendBinary(b []byte) []byte {
	b = appendUvarint(b, uint64(len(w.CIDs)))
	for _, c := range w.CIDs {
		b = appendBytes(b, c.Bytes())
	}
	return b
}

// ParseWantChunks parses a WantChunks payload.
func ParseWantChunks(p []byte) (WantChunks, error) {
	ps := parser{b: p}
	n := ps.count("want count", 2, MaxWant)
	w := WantChunks{CIDs: make([]cid.Cid, 0, n)}
	for i := 0; i < n && ps.err == nil; i++ {
		w.CIDs = append(w.CIDs, ps.cid("wanted cid"))
	}
	if err := ps.end(); err != nil {
		return WantChunks{}, err
	}
	return w, nil
}

// Chunk answers one wanted CID with its encrypted envelope. The receiver
// verifies the CID against the envelope before keeping it.
//
// Payload layout:
//
//	cid length (uvarint) | cid bytes | envelope (rest of payload)
type Chunk struct {
	CID      cid.Cid
	Envelope []byte
}

// AppendBinary appends the payload of c to b.
func (c Chunk) AppendBinary(b []byte) []byte {
	b = appendBytes(b, c.CID.Bytes())
	return append(b, c.Envelope...)
}

// ParseChunk parses a Chunk payload. The envelope aliases p.
func ParseChunk(p []byte) (Chunk, error) {
	ps := parser{b: p}
	c := Chunk{CID: ps.cid("chunk cid")}
	if ps.err != nil {
		return Chunk{}, ps.err
	}
	if len(ps.b) > MaxEnvelope {
		ps.fail("envelope of %d bytes, limit %d", len(ps.b), MaxEnvelope)
		return Chunk{}, ps.err
	}
	c.Envelope = ps.b
	return c, nil
}

// ChunkMissing answers one wanted CID the sender does not hold.
//
// Payload layout:
//
//	cid length (uvarint) | cid bytes
type ChunkMissing struct {
	CID cid.Cid
}

// AppendBinary appends the payload of m to b.
func (m ChunkMissing) AppendBinary(b []byte) []byte { return appendBytes(b, m.CID.Bytes()) }

// ParseChunkMissing parses a ChunkMissing payload.
func ParseChunkMissing(p []byte) (ChunkMissing, error) {
	ps := parser{b: p}
	m := ChunkMissing{CID: ps.cid("missing cid")}
	if err := ps.end(); err != nil {
		return ChunkMissing{}, err
	}
	return m, nil
}
