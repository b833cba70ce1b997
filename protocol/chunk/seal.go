package chunk

import (
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"
)

// Sealed is a chunk ready to store or send.
type Sealed struct {
	CID      cid.Cid // SumCID(Envelope)
	ID       ID      // plaintext identity, also in the envelope header
	Envelope []byte
}

// Seal compresses (when that saves space) and encrypts plaintext under k.
// The result depends only on k and plaintext: every device that seals the
// same bytes in the same epoch gets the same envelope and CID. Seal does
// not retain plaintext; the returned Envelope is newly allocated and owned
// by the caller. Seal fails only with ErrTooLarge, for a plaintext over
// MaxSize.
func Seal(k Keys, plaintext []byte) (Sealed, error) { return AppendSeal(nil, k, plaintext) }

// AppendSeal is Seal writing the envelope at the end of dst, for callers
// that reuse one buffer per chunk: with cap(dst)-len(dst) >= MaxEnvelopeSize
// it allocates nothing larger than a few hundred bytes. The returned
// Envelope is the appended part, dst[len(dst):len(dst)+n] of the (possibly
// grown) array, so it is valid until the caller reuses that buffer. dst's
// existing contents are kept; plaintext must not overlap its spare capacity.
func AppendSeal(dst []byte, k Keys, plaintext []byte) (Sealed, error) {
	if len(plaintext) > MaxSize {
		return Sealed{}, fmt.Errorf("sealing chunk of %d bytes: %w", len(plaintext), ErrTooLarge)
	}
	return appendSealAs(dst, k, PlainID(k, plaintext), plaintext), nil
}

// AppendSealAs is AppendSeal for a caller that has just computed
// id = PlainID(k, plaintext), so the plaintext is hashed once instead of
// twice (a scan needs the identity before it knows whether to seal: an
// unchanged chunk of an edited file keeps its earlier CID). The envelope
// is exactly AppendSeal's when id is right. With a wrong id the envelope
// names another identity: its CID is not the chunk's, and Open refuses it
// (ErrIDMismatch), so the mistake cannot pass for the chunk. It fails only
// with ErrTooLarge, as AppendSeal.
func AppendSealAs(dst []byte, k Keys, id ID, plaintext []byte) (Sealed, error) {
	if len(plaintext) > MaxSize {
		return Sealed{}, fmt.Errorf("sealing chunk of %d bytes: %w", len(plaintext), ErrTooLarge)
	}
	return appendSealAs(dst, k, id, plaintext), nil
}

// appendSealAs seals plaintext, at most MaxSize, under the identity id.
func appendSealAs(dst []byte, k Keys, id ID, plaintext []byte) Sealed {
	start, end := len(dst), len(dst)+Overhead+len(plaintext)
	dst = slices.Grow(dst, Overhead+len(plaintext))
	// The compressed form, if any, is built where the ciphertext will go
	// and then encrypted in place, so it costs no extra buffer.
	payload, compressed := compressOrSkip(plaintext, dst[start+HeaderSize:start+HeaderSize:end-tagSize])
	h := Header{Version: FormatV1, Compressed: compressed, Epoch: k.Epoch, ID: id}
	dst = h.appendTo(dst)
	var ad [HeaderSize]byte
	copy(ad[:], dst[start:])

	key, nonce := sealKey(k, id)
	dst = mustAEAD(key).Seal(dst, nonce[:], payload, ad[:])
	env := dst[start:len(dst):len(dst)]
	return Sealed{CID: SumCID(env), ID: id, Envelope: env}
}
