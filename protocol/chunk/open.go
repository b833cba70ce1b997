package chunk

import (
	"fmt"

	"github.com/ipfs/go-cid"
)

// Open checks that envelope is the chunk c and returns its plaintext. The
// checks run in order, each failure wrapping its own sentinel:
//
//   - envelope over MaxEnvelopeSize: ErrTooLarge (before hashing it);
//   - c is not a chunk CID: ErrBadCID; envelope does not hash to c:
//     ErrCIDMismatch (so nothing is parsed from bytes that are not the
//     chunk asked for);
//   - the header: ErrTruncated, ErrTooLarge or ErrUnknownFormat as in
//     ParseHeader; sealed in another epoch than k.Epoch: ErrWrongEpoch;
//   - authentication fails: ErrDecrypt;
//   - a compressed payload that is not one zstd frame of declared size:
//     ErrDecompress, or ErrTooLarge when it would decode to over MaxSize;
//   - the plaintext does not hash to the header's identity: ErrIDMismatch.
//
// The returned slice is newly allocated and owned by the caller.
func Open(k Keys, c cid.Cid, envelope []byte) ([]byte, error) {
	if len(envelope) > MaxEnvelopeSize {
		return nil, fmt.Errorf("opening chunk %v of %d bytes: %w", c, len(envelope), ErrTooLarge)
	}
	if err := VerifyCID(c, envelope); err != nil {
		return nil, fmt.Errorf("opening chunk: %w", err)
	}
	return openChecked(nil, k, c, envelope)
}

// OpenVerifiedInto is Open for an envelope the caller has just checked
// against c with VerifyCID (a fetch verifies each chunk as it arrives,
// before it counts as received): it makes every check of Open after that
// one, which would hash the envelope a second time. The plaintext is
// written into buf's array from its start when buf has the capacity (for
// callers that pool chunk buffers), else into a new one; a compressed
// chunk's plaintext is always new. On error it returns nil.
func OpenVerifiedInto(buf []byte, k Keys, c cid.Cid, envelope []byte) ([]byte, error) {
	if len(envelope) > MaxEnvelopeSize {
		return nil, fmt.Errorf("opening chunk %v of %d bytes: %w", c, len(envelope), ErrTooLarge)
	}
	return openChecked(buf[:0], k, c, envelope)
}

// openChecked opens an envelope whose CID is known to be c, writing the
// plaintext into dst, which must be empty (nil: a new buffer of the
// payload's size).
func openChecked(dst []byte, k Keys, c cid.Cid, envelope []byte) ([]byte, error) {
	h, err := ParseHeader(envelope)
	if err != nil {
		return nil, fmt.Errorf("opening chunk %v: %w", c, err)
	}
	if h.Epoch != k.Epoch {
		return nil, fmt.Errorf("opening chunk %v of epoch %d with keys of epoch %d: %w", c, h.Epoch, k.Epoch, ErrWrongEpoch)
	}
	key, nonce := sealKey(k, h.ID)
	aead := mustAEAD(key)
	ct := envelope[HeaderSize:]
	if dst == nil {
		dst = make([]byte, 0, len(ct)-tagSize)
	}
	payload, err := aead.Open(dst, nonce[:], ct, envelope[:HeaderSize])
	if err != nil {
		return nil, fmt.Errorf("opening chunk %v: %w", c, ErrDecrypt)
	}
	plaintext := payload
	if h.Compressed {
		if plaintext, err = decompress(payload); err != nil {
			return nil, fmt.Errorf("opening chunk %v: %w", c, err)
		}
	}
	if PlainID(k, plaintext) != h.ID {
		return nil, fmt.Errorf("opening chunk %v: %w", c, ErrIDMismatch)
	}
	return plaintext, nil
}
