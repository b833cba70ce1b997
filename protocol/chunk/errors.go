package chunk

import "errors"

// Sentinel errors. Open and VerifyCID wrap exactly one of them, so callers
// classify failures with errors.Is.
var (
	// ErrBadParams means chunking Params are out of range (see Params).
	ErrBadParams = errors.New("invalid chunking parameters")
	// ErrTooLarge means a plaintext, an envelope or a decompressed payload is
	// larger than MaxSize allows.
	ErrTooLarge = errors.New("chunk too large")
	// ErrBadCID means a CID is not a chunk CID: not CIDv1, codec raw,
	// BLAKE3 with a 32-byte digest.
	ErrBadCID = errors.New("not a chunk CID")
	// ErrCIDMismatch means the envelope does not hash to the CID asked for.
	ErrCIDMismatch = errors.New("chunk CID mismatch")
	// ErrTruncated means an envelope is shorter than its header and tag.
	ErrTruncated = errors.New("truncated chunk envelope")
	// ErrUnknownFormat means an envelope carries a format version or flag
	// bits this code does not know.
	ErrUnknownFormat = errors.New("unknown chunk format")
	// ErrWrongEpoch means an envelope was sealed in another key epoch than
	// the Keys given to Open.
	ErrWrongEpoch = errors.New("chunk sealed in another key epoch")
	// ErrDecrypt means AEAD authentication failed: wrong keys or tampering.
	ErrDecrypt = errors.New("chunk decryption failed")
	// ErrDecompress means an authenticated compressed payload is not a
	// valid zstd frame as Seal writes them.
	ErrDecompress = errors.New("chunk decompression failed")
	// ErrIDMismatch means the opened plaintext does not hash to the
	// identity in the envelope header.
	ErrIDMismatch = errors.New("chunk plaintext identity mismatch")
)
