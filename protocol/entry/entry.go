package entry

import (
	"bytes"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/keys"
)

// sigDomain prefixes the signing input so an entry signature can never be
// mistaken for a signature over anything else the device key signs.
const sigDomain = "weft/entry/v1\x00"

// Entry is one signed, canonically encoded log entry. It is made only by New
// or Decode (and Validate), is immutable and safe for concurrent use. Slices
// returned by its accessors are shared: callers must not modify them.
type Entry struct {
	w       wireEntry
	vault   keys.VaultID
	author  keys.DeviceID
	prev    cid.Cid
	headers []VersionHeader
	raw     []byte
	id      cid.Cid
	pieces  bool // a version lists pieces (format 2, or format 3)
	// canonical: raw passed Decode's canonical-form check (New and
	// Decode; not DecodeStored and its kin).
	canonical bool
}

// Head is what a device or relay remembers of an author's log to validate
// the next entry: the last entry's sequence number, CID and clock. The zero
// Head means "no entry known": the next must have sequence 1.
type Head struct {
	Seq   uint64
	CID   cid.Cid
	Clock uint64
}

// Format returns the format version: FormatV3 when the body names its
// author, else FormatV2 when a version lists pieces, FormatV1 otherwise.
func (e *Entry) Format() uint64 { return e.w.Format }

// Pieced reports whether a version of the entry lists pieces rather than
// chunks (docs/protocol/entries.md, "Pieces").
func (e *Entry) Pieced() bool { return e.pieces }

// Vault returns the vault the entry belongs to.
func (e *Entry) Vault() keys.VaultID { return e.vault }

// Author returns the device that wrote and signed the entry.
func (e *Entry) Author() keys.DeviceID { return e.author }

// Seq returns the entry's position in its author's log, from 1.
func (e *Entry) Seq() uint64 { return e.w.Seq }

// Prev returns the CID of the author's previous entry, or cid.Undef for
// sequence 1.
func (e *Entry) Prev() cid.Cid { return e.prev }

// Clock returns the entry's Lamport clock.
func (e *Entry) Clock() uint64 { return e.w.Clock }

// Epoch returns the key epoch whose body key sealed the body.
func (e *Entry) Epoch() uint32 { return e.w.Epoch }

// Time returns the author's wall-clock time at writing, in unix
// milliseconds. It is the author's claim, not checked against anything.
func (e *Entry) Time() int64 { return e.w.Time }

// Headers returns the public version headers, one per version in the body.
func (e *Entry) Headers() []VersionHeader { return e.headers }

// SealedBody returns the encrypted body (nonce || ciphertext || tag).
func (e *Entry) SealedBody() []byte { return e.w.Body }

// Signature returns the author's ed25519 signature.
func (e *Entry) Signature() []byte { return e.w.Sig }

// Bytes returns the canonical encoding of the signed entry.
func (e *Entry) Bytes() []byte { return e.raw }

// CID returns the entry's CID: CIDOf(e.Bytes()).
func (e *Entry) CID() cid.Cid { return e.id }

// Head returns the Head that e makes for its author's log.
func (e *Entry) Head() Head { return Head{Seq: e.w.Seq, CID: e.id, Clock: e.w.Clock} }

// VersionID returns the ID of the version at index i of e's body.
func (e *Entry) VersionID(i int) VersionID {
	return VersionID{Author: e.author, Seq: e.w.Seq, Index: uint32(i)}
}

// signingInput returns what the author signs: sigDomain followed by the
// canonical encoding of the 10-element array of fields 0..9. Because a
// canonical array of 11 elements starts 0x8b and ends with the signature as
// a 64-byte string (0x58 0x40 + 64 bytes), that is the raw entry with its
// first byte replaced by 0x8a and its last 66 bytes removed.
func signingInput(raw []byte) []byte {
	return appendSigningInput(make([]byte, 0, len(sigDomain)+len(raw)), raw)
}

// appendSigningInput appends the signing input of raw to dst.
func appendSigningInput(dst, raw []byte) []byte {
	n := len(raw) - 2 - sigSize
	dst = append(dst, sigDomain...)
	dst = append(dst, 0x8a)
	return append(dst, raw[1:n]...)
}

// verifySig checks e's signature.
func (e *Entry) verifySig() error {
	if len(e.raw) < 3+sigSize { // only a zero Entry{}; New and Decode never make one
		return fmt.Errorf("entry without encoding: %w", ErrBadSignature)
	}
	buf := getBuf()
	defer putBuf(buf)
	buf.Grow(len(sigDomain) + len(e.raw))
	msg := appendSigningInput(buf.AvailableBuffer(), e.raw)
	if !e.author.Verify(msg, e.w.Sig) {
		return fmt.Errorf("entry %s seq %d: %w", e.author.Short(), e.w.Seq, ErrBadSignature)
	}
	return nil
}

// Decode parses a canonically encoded signed entry and checks its shape and
// limits, in this order: total size (ErrEntryTooLarge), format version
// (ErrUnknownFormat), CBOR well-formedness and decoder limits (ErrMalformed,
// ErrFieldTooLarge), per-field limits (ErrTooManyVersions, ErrTooManyRefs,
// ErrTooManySupersedes, ErrBodyTooLarge), canonical form (ErrNonCanonical),
// then field semantics (ErrMalformed: a vault, author, signature or
// version-ID author of the wrong length, sequence 0, a previous CID present
// at sequence 1 or missing after it, a CID of the wrong kind, supersedes out
// of order, a superseded own version not earlier than this entry, a sealed
// body shorter than nonce and tag).
//
// Decode does not check the signature or the chain: that is Validate's job.
// It copies data; the caller may reuse it.
func Decode(data []byte) (*Entry, error) { return decode(data, true) }

// decode is Decode, with the canonical-form check only when canonical is
// set (DecodeStored clears it).
func decode(data []byte, canonical bool) (*Entry, error) {
	if len(data) > MaxEntrySize { // before the copy
		return nil, fmt.Errorf("decoding entry: %d bytes, limit %d: %w", len(data), MaxEntrySize, ErrEntryTooLarge)
	}
	// One copy, which the entry's bytes and its sealed body share.
	return decodeOwned(bytes.Clone(data), canonical)
}

// decodeOwned is decode keeping data itself as the entry's bytes: the
// caller gives data up (New, which has just encoded it).
func decodeOwned(data []byte, canonical bool) (*Entry, error) {
	if len(data) > MaxEntrySize {
		return nil, fmt.Errorf("decoding entry: %d bytes, limit %d: %w", len(data), MaxEntrySize, ErrEntryTooLarge)
	}
	if err := peekFormat(data); err != nil {
		return nil, fmt.Errorf("decoding entry: %w", err)
	}
	e := &Entry{}
	if err := unmarshal(data, &e.w); err != nil {
		return nil, fmt.Errorf("decoding entry: %w", err)
	}
	if err := checkEntryLimits(&e.w); err != nil {
		return nil, fmt.Errorf("decoding entry: %w", err)
	}
	if canonical && !isCanonical(&e.w, data) {
		return nil, fmt.Errorf("decoding entry: %w", ErrNonCanonical)
	}
	if err := e.fill(); err != nil {
		return nil, fmt.Errorf("decoding entry seq %d: %w", e.w.Seq, err)
	}
	e.raw = data
	e.id = CIDOf(e.raw)
	e.canonical = canonical
	return e, nil
}

// peekFormat reads the first element of the top-level array and rejects a
// format other than FormatV1, FormatV2 and FormatV3 (the same layout; only
// the sealed body and what the headers may name differ) before the rest
// is decoded, so a future format with another layout reports
// ErrUnknownFormat rather than ErrMalformed.
func peekFormat(data []byte) error {
	if len(data) < 2 || data[0]>>5 != 4 { // major type 4: array
		return fmt.Errorf("%w: not a CBOR array", ErrMalformed)
	}
	if data[0]&0x1f >= 24 { // V1's 11 elements are counted in the initial byte
		return fmt.Errorf("%w: array header %#x", ErrUnknownFormat, data[0])
	}
	if data[1] != FormatV1 && data[1] != FormatV2 && data[1] != FormatV3 {
		return fmt.Errorf("%w: first element %#x", ErrUnknownFormat, data[1])
	}
	return nil
}

// checkEntryLimits applies the per-field limits the CBOR decoder cannot.
func checkEntryLimits(w *wireEntry) error {
	if len(w.Headers) > MaxVersions {
		return fmt.Errorf("%d versions, limit %d: %w", len(w.Headers), MaxVersions, ErrTooManyVersions)
	}
	refs := 0
	for i := range w.Headers {
		refs += len(w.Headers[i].Refs)
		if n := len(w.Headers[i].Supersedes); n > MaxSupersedes {
			return fmt.Errorf("version %d supersedes %d, limit %d: %w", i, n, MaxSupersedes, ErrTooManySupersedes)
		}
	}
	if refs > MaxRefs {
		return fmt.Errorf("%d chunk references, limit %d: %w", refs, MaxRefs, ErrTooManyRefs)
	}
	if len(w.Body) > MaxBodySize {
		return fmt.Errorf("body of %d bytes, limit %d: %w", len(w.Body), MaxBodySize, ErrBodyTooLarge)
	}
	return nil
}

// fill checks field semantics and builds the domain views of w.
func (e *Entry) fill() error {
	w := &e.w
	if len(w.Vault) != len(e.vault) || len(w.Author) != len(e.author) || len(w.Sig) != sigSize {
		return fmt.Errorf("%w: vault, author or signature of %d, %d, %d bytes, want 32, 32, 64",
			ErrMalformed, len(w.Vault), len(w.Author), len(w.Sig))
	}
	e.vault, e.author = keys.VaultID(w.Vault), keys.DeviceID(w.Author)
	if w.Seq == 0 {
		return fmt.Errorf("%w: sequence 0", ErrMalformed)
	}
	if w.Seq == 1 {
		if len(w.Prev) != 0 {
			return fmt.Errorf("%w: sequence 1 with a previous CID", ErrMalformed)
		}
	} else {
		c, err := parseCID(w.Prev, entryCIDPrefix)
		if err != nil {
			return fmt.Errorf("previous entry: %w", err)
		}
		e.prev = c
	}
	if len(w.Body) < nonceSize+tagSize {
		return fmt.Errorf("%w: sealed body of %d bytes is shorter than nonce and tag", ErrMalformed, len(w.Body))
	}
	e.headers = make([]VersionHeader, len(w.Headers))
	pieces := false
	for i := range w.Headers {
		wh := &w.Headers[i]
		h := &e.headers[i]
		if len(wh.Refs) > 0 {
			h.Refs = make([]cid.Cid, len(wh.Refs))
			prefix := chunkCIDPrefix
			if w.Format >= FormatV2 && bytes.HasPrefix(wh.Refs[0], pieceCIDPrefix) {
				prefix, pieces = pieceCIDPrefix, true
			}
			for j, b := range wh.Refs {
				c, err := parseCID(b, prefix)
				if err != nil {
					return fmt.Errorf("version %d ref %d (all chunks or all pieces): %w", i, j, err)
				}
				h.Refs[j] = c
			}
		}
		var err error
		if h.Supersedes, err = fromWireIDs(wh.Supersedes); err != nil {
			return fmt.Errorf("version %d: %w", i, err)
		}
		if err := checkSupersedes(h.Supersedes, e.author, w.Seq); err != nil {
			return fmt.Errorf("version %d: %w", i, err)
		}
	}
	if w.Format == FormatV2 && !pieces {
		return fmt.Errorf("%w: format %d without a piece (write format %d)", ErrMalformed, FormatV2, FormatV1)
	}
	e.pieces = pieces
	return nil
}

// checkSupersedes requires ids strictly increasing, and any of the author's
// own versions to come from an earlier entry.
func checkSupersedes(ids []VersionID, author keys.DeviceID, seq uint64) error {
	for i, id := range ids {
		if i > 0 && ids[i-1].Compare(id) >= 0 {
			return fmt.Errorf("%w: supersedes not strictly increasing at %d", ErrMalformed, i)
		}
		if id.Author == author && id.Seq >= seq {
			return fmt.Errorf("%w: supersedes own version %v not earlier than seq %d", ErrMalformed, id, seq)
		}
		if id.Seq == 0 {
			return fmt.Errorf("%w: supersedes version with sequence 0", ErrMalformed)
		}
		if id.Index >= MaxVersions {
			return fmt.Errorf("%w: supersedes version index %d, limit %d", ErrMalformed, id.Index, MaxVersions)
		}
	}
	return nil
}
