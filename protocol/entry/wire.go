package entry

import (
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// Wire structs: the exact CBOR shape of entries and bodies. Each is a CBOR
// array (toarray) whose element order is the field number in
// docs/protocol/entries.md. They are not the domain types: conversion checks
// lengths, CIDs and limits.
//
// Fixed-size byte fields (keys, hashes, CIDs, the signature) are []byte
// here, not arrays: the CBOR library moves arrays byte by byte through
// reflection, which made decoding several times slower. Their lengths are
// checked when converting to domain types (ErrMalformed).

// wireEntry is a signed entry: an array of 11 elements.
type wireEntry struct {
	_       struct{}     `cbor:",toarray"`
	Format  uint64       // 0
	Vault   []byte       // 1 bstr(32)
	Author  []byte       // 2 bstr(32), ed25519 public key
	Seq     uint64       // 3
	Prev    []byte       // 4 binary CID of the previous entry; empty for seq 1
	Clock   uint64       // 5 Lamport clock
	Epoch   uint32       // 6
	Time    int64        // 7 unix milliseconds
	Headers []wireHeader // 8
	Body    sharedBytes  // 9 sealed body: nonce || ciphertext || tag
	Sig     []byte       // 10 bstr(64)
}

// sharedBytes is a byte string that decodes as a slice of the input
// instead of a copy of it (the CBOR library copies every []byte field):
// the sealed body is most of an entry's bytes (4 MiB of small files'
// bytes inline), and an open of a log of 100,000 small files copied
// 200 MB of bodies only to learn each entry's CID and head. The decoders
// keep their input: decodeOwned's caller gives it up, and decode copies
// it first. It encodes as a []byte does.
type sharedBytes []byte

// UnmarshalBinary keeps b itself. The library calls it with a slice of
// the input it decodes (encoding.BinaryUnmarshaler's contract says not to
// keep it; keeping it is what this type is for, and safe because the
// entry owns its input, see above).
func (s *sharedBytes) UnmarshalBinary(b []byte) error {
	*s = b
	return nil
}

// wireHeader is a public version header: [refs, supersedes].
type wireHeader struct {
	_          struct{} `cbor:",toarray"`
	Refs       [][]byte // binary chunk CIDs, 36 bytes each
	Supersedes []wireVersionID
}

// wireVersionID is [author bstr(32), seq, index].
type wireVersionID struct {
	_      struct{} `cbor:",toarray"`
	Author []byte
	Seq    uint64
	Index  uint32
}

// wireBody is the body plaintext: [versions].
type wireBody struct {
	_        struct{} `cbor:",toarray"`
	Versions []wireVersion
}

// wireNamedBody is a format-3 body plaintext: [versions, author name].
type wireNamedBody struct {
	_        struct{} `cbor:",toarray"`
	Versions []wireVersion
	Author   string
}

// wireVersion is one file version: an array of 10 elements.
type wireVersion struct {
	_          struct{}        `cbor:",toarray"`
	Path       string          // 0
	Kind       uint8           // 1
	Mode       uint32          // 2
	MTime      int64           // 3
	Size       uint64          // 4
	Supersedes []wireVersionID // 5
	Hash       []byte          // 6 bstr(32)
	Chunks     []wireChunkRef  // 7
	Inline     []byte          // 8
	Target     string          // 9
}

// wireChunkRef is [cid bstr(36), size].
type wireChunkRef struct {
	_    struct{} `cbor:",toarray"`
	CID  []byte
	Size uint32
}

// toWireIDs converts ids; the result shares ids' memory.
func toWireIDs(ids []VersionID) []wireVersionID {
	if len(ids) == 0 {
		return nil
	}
	w := make([]wireVersionID, len(ids))
	for i := range ids {
		w[i] = wireVersionID{Author: ids[i].Author[:], Seq: ids[i].Seq, Index: ids[i].Index}
	}
	return w
}

func fromWireIDs(w []wireVersionID) ([]VersionID, error) {
	if len(w) == 0 {
		return nil, nil
	}
	ids := make([]VersionID, len(w))
	for i, x := range w {
		if len(x.Author) != len(ids[i].Author) {
			return nil, fmt.Errorf("%w: version ID author of %d bytes", ErrMalformed, len(x.Author))
		}
		ids[i] = VersionID{Author: keys.DeviceID(x.Author), Seq: x.Seq, Index: x.Index}
	}
	return ids, nil
}
