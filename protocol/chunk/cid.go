package chunk

import (
	"fmt"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3/guts"
)

// CID format: CIDv1, multicodec raw, multihash BLAKE3 with a 32-byte digest.
const (
	cidCodecRaw  = 0x55
	mhBLAKE3     = 0x1e
	digestLength = 32
)

// cidPrefix is the binary CID up to the digest: version 1, codec raw,
// multihash code BLAKE3, digest length 32 (each a one-byte uvarint).
var cidPrefix = [4]byte{0x01, cidCodecRaw, mhBLAKE3, digestLength}

// SumCID returns the chunk CID of data: CIDv1, codec raw, BLAKE3-256.
func SumCID(data []byte) cid.Cid {
	return cidOfDigest(blake3Sum256(data, &guts.IV, 0))
}

func cidOfDigest(d [32]byte) cid.Cid {
	var b [len(cidPrefix) + digestLength]byte
	copy(b[:], cidPrefix[:])
	copy(b[len(cidPrefix):], d[:])
	c, err := cid.Cast(b[:])
	if err != nil {
		panic("chunk: invariant: chunk CID does not parse: " + err.Error())
	}
	return c
}

// VerifyCID checks that data is the chunk named by c. It needs no keys, so
// relays use it on every chunk they receive. It returns nil, or an error
// wrapping ErrBadCID when c is not a chunk CID (another version, codec or
// hash) or ErrCIDMismatch when data hashes to another CID.
func VerifyCID(c cid.Cid, data []byte) error {
	k := c.KeyString()
	if len(k) != len(cidPrefix)+digestLength || k[:len(cidPrefix)] != string(cidPrefix[:]) {
		return fmt.Errorf("verifying chunk %v: %w", c, ErrBadCID)
	}
	d := blake3Sum256(data, &guts.IV, 0)
	if k[len(cidPrefix):] != string(d[:]) {
		return fmt.Errorf("verifying chunk %v: %w", c, ErrCIDMismatch)
	}
	return nil
}
