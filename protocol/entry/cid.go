package entry

import (
	"bytes"
	"fmt"

	"github.com/ipfs/go-cid"
	_ "github.com/multiformats/go-multihash/register/blake3" // BLAKE3 in go-multihash
)

// Binary CID prefixes: version 1, codec, multihash BLAKE3 (0x1e), 32 bytes.
// Both kinds of CID are exactly 36 bytes; anything else is rejected, so each
// has one binary form.
var (
	entryCIDPrefix = []byte{0x01, 0x71, 0x1e, 0x20} // dag-cbor
	chunkCIDPrefix = []byte{0x01, 0x55, 0x1e, 0x20} // raw
)

const cidLen = 4 + 32

// CIDOf returns the CID of an encoded signed entry: CIDv1, codec dag-cbor
// (0x71), BLAKE3-256 multihash of all its bytes.
func CIDOf(raw []byte) cid.Cid {
	sum := sum256(raw)
	var b [cidLen]byte
	copy(b[:], entryCIDPrefix)
	copy(b[4:], sum[:])
	c, err := cid.Cast(b[:])
	if err != nil {
		panic("entry: invariant: casting a well-formed CID: " + err.Error())
	}
	return c
}

// parseCID parses a binary CID that must carry prefix.
func parseCID(b, prefix []byte) (cid.Cid, error) {
	if len(b) != cidLen || !bytes.Equal(b[:4], prefix) {
		return cid.Undef, fmt.Errorf("%w: CID %x: want 36 bytes starting %x", ErrMalformed, b, prefix)
	}
	c, err := cid.Cast(b)
	if err != nil {
		return cid.Undef, fmt.Errorf("%w: CID %x: %v", ErrMalformed, b, err)
	}
	return c, nil
}

// checkCID reports whether c is a defined CID with prefix.
func checkCID(c cid.Cid, prefix []byte, what string) error {
	if !c.Defined() {
		return fmt.Errorf("%w: %s CID undefined", ErrMalformed, what)
	}
	b := c.Bytes()
	if len(b) != cidLen || !bytes.Equal(b[:4], prefix) {
		return fmt.Errorf("%w: %s CID %s: want CIDv1 BLAKE3-256 with prefix %x", ErrMalformed, what, c, prefix)
	}
	return nil
}
