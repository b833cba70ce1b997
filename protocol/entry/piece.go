package entry

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ipfs/go-cid"
)

// Chunk-list pieces (docs/protocol/entries.md, "Pieces").
//
// A version lists its chunks in the entry only while they are few. A large
// file's chunk list is cut into pieces: public, content-addressed blocks of
// chunk references, stored and sent like chunks. The version then lists
// its pieces instead (a ChunkRef whose CID is a piece CID and whose Size is
// the plaintext bytes the piece covers), so an entry stays small whatever
// the file's size, and a new version of a large file costs only the pieces
// around what changed: the cut between pieces depends on the chunk CIDs
// near it, so an edit moves no boundary far from itself.
//
// A piece holds only what the entry's public headers already showed
// (chunk CIDs) and the chunks' plaintext sizes, which a keyless relay can
// already estimate from the envelopes' sizes; docs/security.md says so.
// It needs no key, so relays read pieces to learn which chunks a version
// needs, and devices everywhere cut the same list into the same pieces.

// FormatV2 is the entry format whose version lists may name pieces. An
// entry with at least one piece is written as FormatV2 and one without any
// as FormatV1, so each entry has one form; a FormatV1 reader rejects a
// FormatV2 entry as ErrUnknownFormat.
const FormatV2 = 2

// FormatV3 is the entry format whose body names its author (Body.Author).
// An entry whose body has a name is written as FormatV3, whether or not it
// lists pieces (both are allowed in it), and one without a name as
// FormatV1 or FormatV2, so each entry still has one form; a reader that
// predates it rejects a FormatV3 entry as ErrUnknownFormat.
const FormatV3 = 3

// PieceFormatV1 is the only piece format.
const PieceFormatV1 = 1

// Piece limits. MaxPieceSize keeps a piece inside one chunk frame;
// MaxFileChunks bounds what a version's pieces may expand to, so a hostile
// author cannot make a receiver hold more than about 250 MB of chunk
// references for one version (4,194,304 chunks: 256 GiB at the 64 KiB
// average chunk).
const (
	MaxPieceRefs  = 4096
	MaxPieceSize  = 256 << 10
	MaxFileChunks = 1 << 22
)

// PieceParams says how an author cuts a chunk list into pieces. The cut is
// not checked by receivers (any split into valid pieces is a valid
// version); it matters only for deduplication, so every device uses
// DefaultPieceParams outside tests.
type PieceParams struct {
	// Direct is the most chunks a version lists in the entry itself; a
	// longer list is cut into pieces.
	Direct int
	// Min and Max bound the references of every piece but the last.
	Min, Max int
	// Mask decides content-defined cuts: after at least Min references, a
	// piece ends after a chunk whose CID's last two digest bytes, as a
	// big-endian number, have every bit of Mask set (probability
	// 1/(Mask+1) per chunk).
	Mask uint16
}

// DefaultPieceParams: lists of up to 1,024 chunks (about 64 MiB) stay in
// the entry; pieces average about 1,100 references (about 47 KB, covering
// about 68 MiB of file).
func DefaultPieceParams() PieceParams {
	return PieceParams{Direct: 1024, Min: 64, Max: MaxPieceRefs, Mask: 1023}
}

// Piece is one encoded piece: its CID, its bytes, and the references it holds.
type Piece struct {
	CID   cid.Cid
	Bytes []byte
	Refs  []ChunkRef
}

// wirePiece is a piece: [format, [[cid bstr(36), size], ...]].
type wirePiece struct {
	_      struct{} `cbor:",toarray"`
	Format uint64
	Refs   []wireChunkRef
}

// IsPieceCID reports whether c names a piece (CIDv1, codec dag-cbor,
// BLAKE3-256), as opposed to a chunk (codec raw).
func IsPieceCID(c cid.Cid) bool {
	b := c.Bytes()
	return len(b) == cidLen && bytes.Equal(b[:4], pieceCIDPrefix)
}

// pieceCIDPrefix: a piece is DAG-CBOR data like an entry, so it has an
// entry's kind of CID. Pieces and entries never share a namespace: an
// entry is looked up in a log, a piece among chunks.
var pieceCIDPrefix = entryCIDPrefix

// HasPieces reports whether v lists pieces rather than chunks.
func (v *Version) HasPieces() bool { return len(v.Chunks) > 0 && IsPieceCID(v.Chunks[0].CID) }

// SplitChunks returns what a version with chunk list refs lists in its
// entry: refs itself when it has at most p.Direct chunks, otherwise one
// reference per piece and the pieces, in file order. refs must be valid
// chunk references; SplitChunks does not modify them.
func SplitChunks(refs []ChunkRef, p PieceParams) ([]ChunkRef, []Piece) {
	if len(refs) <= p.Direct {
		return refs, nil
	}
	var (
		listed []ChunkRef
		pieces []Piece
	)
	start := 0
	for i := range refs {
		n := i - start + 1
		if i < len(refs)-1 && n < p.Max && (n < p.Min || !cutAfter(refs[i].CID, p.Mask)) {
			continue
		}
		pc := encodePiece(refs[start : i+1])
		var size uint32
		for _, r := range pc.Refs {
			size += r.Size
		}
		listed = append(listed, ChunkRef{CID: pc.CID, Size: size})
		pieces = append(pieces, pc)
		start = i + 1
	}
	return listed, pieces
}

// cutAfter is the content-defined cut rule: the last two digest bytes of
// the chunk's CID have every bit of mask set.
func cutAfter(c cid.Cid, mask uint16) bool {
	k := c.KeyString()
	return binary.BigEndian.Uint16([]byte(k[len(k)-2:]))&mask == mask
}

// encodePiece encodes refs (1..MaxPieceRefs valid chunk references).
func encodePiece(refs []ChunkRef) Piece {
	w := wirePiece{Format: PieceFormatV1, Refs: make([]wireChunkRef, len(refs))}
	for i, r := range refs {
		w.Refs[i] = wireChunkRef{CID: r.CID.Bytes(), Size: r.Size}
	}
	raw := marshal(&w)
	return Piece{CID: CIDOf(raw), Bytes: raw, Refs: refs}
}

// DecodePiece checks that data is the piece named by c and returns its
// chunk references. It rejects, in order: a CID that is not a piece CID
// (ErrMalformed), more than MaxPieceSize bytes (ErrFieldTooLarge), bytes
// that hash to another CID (ErrPieceMismatch), CBOR that is malformed or
// over the decoder's limits, not canonical (ErrNonCanonical), another
// format (ErrUnknownFormat), no references or more than MaxPieceRefs, a
// reference that is not a chunk CID or has size 0 (ErrMalformed). It needs
// no keys and copies what it keeps.
func DecodePiece(c cid.Cid, data []byte) ([]ChunkRef, error) {
	if !IsPieceCID(c) {
		return nil, fmt.Errorf("decoding piece %s: %w: not a piece CID", c, ErrMalformed)
	}
	if len(data) > MaxPieceSize {
		return nil, fmt.Errorf("decoding piece %s: %d bytes, limit %d: %w", c, len(data), MaxPieceSize, ErrFieldTooLarge)
	}
	if !CIDOf(data).Equals(c) {
		return nil, fmt.Errorf("decoding piece %s: %w", c, ErrPieceMismatch)
	}
	var w wirePiece
	if err := unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("decoding piece %s: %w", c, err)
	}
	if !isCanonical(&w, data) {
		return nil, fmt.Errorf("decoding piece %s: %w", c, ErrNonCanonical)
	}
	if w.Format != PieceFormatV1 {
		return nil, fmt.Errorf("decoding piece %s: format %d: %w", c, w.Format, ErrUnknownFormat)
	}
	if len(w.Refs) == 0 || len(w.Refs) > MaxPieceRefs {
		return nil, fmt.Errorf("decoding piece %s: %w: %d references, want 1..%d", c, ErrMalformed, len(w.Refs), MaxPieceRefs)
	}
	refs := make([]ChunkRef, len(w.Refs))
	for i, r := range w.Refs {
		cc, err := parseCID(r.CID, chunkCIDPrefix)
		if err != nil {
			return nil, fmt.Errorf("decoding piece %s: reference %d: %w", c, i, err)
		}
		if r.Size == 0 {
			return nil, fmt.Errorf("decoding piece %s: %w: reference %d has size 0", c, ErrMalformed, i)
		}
		refs[i] = ChunkRef{CID: cc, Size: r.Size}
	}
	return refs, nil
}

// ExpandPieces returns v with its pieces replaced by the chunks they list,
// in order; a version without pieces is returned as it is. get returns a
// piece's references (from DecodePiece, typically through a store). It
// fails when get does, when a piece's chunks do not add up to the size its
// reference claims (ErrPieceMismatch), or when the version would hold more
// than MaxFileChunks chunks (ErrTooManyRefs). The result shares nothing
// with v's chunk list.
func ExpandPieces(v Version, get func(cid.Cid) ([]ChunkRef, error)) (Version, error) {
	if !v.HasPieces() {
		return v, nil
	}
	var out []ChunkRef
	for i, p := range v.Chunks {
		refs, err := get(p.CID)
		if err != nil {
			return Version{}, fmt.Errorf("expanding %q: piece %d (%s): %w", v.Path, i, p.CID, err)
		}
		if len(out)+len(refs) > MaxFileChunks {
			return Version{}, fmt.Errorf("expanding %q: over %d chunks: %w", v.Path, MaxFileChunks, ErrTooManyRefs)
		}
		var sum uint64
		for _, r := range refs {
			sum += uint64(r.Size)
		}
		if sum != uint64(p.Size) {
			return Version{}, fmt.Errorf("expanding %q: piece %d holds %d bytes, its reference says %d: %w", v.Path, i, sum, p.Size, ErrPieceMismatch)
		}
		out = append(out, refs...)
	}
	v.Chunks = out
	return v, nil
}

// PieceCIDs returns the pieces v lists, in order (nil for a version
// without pieces).
func PieceCIDs(v *Version) []cid.Cid {
	if !v.HasPieces() {
		return nil
	}
	out := make([]cid.Cid, len(v.Chunks))
	for i, c := range v.Chunks {
		out[i] = c.CID
	}
	return out
}

// SplitBody returns the body to sign (each long chunk list replaced by
// its pieces) and the pieces to store. b itself is not changed: it keeps
// the whole lists, which the device folds into its graph.
func SplitBody(b *Body, p PieceParams) (*Body, []Piece) {
	var (
		out    *Body
		pieces []Piece
	)
	for i := range b.Versions {
		listed, ps := SplitChunks(b.Versions[i].Chunks, p)
		if ps == nil {
			continue
		}
		if out == nil {
			out = &Body{Versions: append([]Version(nil), b.Versions...), Author: b.Author}
		}
		out.Versions[i].Chunks = listed
		pieces = append(pieces, ps...)
	}
	if out == nil {
		return b, nil
	}
	return out, pieces
}

// HasPieces reports whether any version of b lists pieces instead of its
// chunks.
func (b *Body) HasPieces() bool {
	for i := range b.Versions {
		if b.Versions[i].HasPieces() {
			return true
		}
	}
	return false
}
