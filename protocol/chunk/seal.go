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

// AppendEnvelopeAs re-creates an envelope that AppendSeal (this package's
// compression rule and encoder) made before: it seals plaintext under the
// identity id with the compression choice of that sealing (compressed: the
// whole plaintext zstd-compressed; otherwise stored as it is), without the
// sampling probe and without hashing the result for its CID. The result is
// the earlier envelope exactly when plaintext and id are those it was
// sealed from; a caller checks that by comparing the result's Tag with the
// earlier envelope's, which costs nothing, where checking the CID hashes
// the envelope again. An envelope sealed elsewhere (another encoder, or a
// member that compresses otherwise) need not be re-created by this. A
// chunk server re-creates the chunks it sealed itself this way.
// It returns dst with the envelope appended, and fails only with
// ErrTooLarge, as AppendSeal.
func AppendEnvelopeAs(dst []byte, k Keys, id ID, plaintext []byte, compressed bool) ([]byte, error) {
	if len(plaintext) > MaxSize {
		return dst, fmt.Errorf("sealing chunk of %d bytes: %w", len(plaintext), ErrTooLarge)
	}
	start, end := len(dst), len(dst)+Overhead+len(plaintext)
	dst = slices.Grow(dst, Overhead+len(plaintext))
	payload := plaintext
	if compressed {
		payload = compress(plaintext, dst[start+HeaderSize:start+HeaderSize:end-tagSize])
	}
	return appendSealed(dst, k, id, payload, compressed), nil
}

// appendSealAs seals plaintext, at most MaxSize, under the identity id.
func appendSealAs(dst []byte, k Keys, id ID, plaintext []byte) Sealed {
	start, end := len(dst), len(dst)+Overhead+len(plaintext)
	dst = slices.Grow(dst, Overhead+len(plaintext))
	// The compressed form, if any, is built where the ciphertext will go
	// and then encrypted in place, so it costs no extra buffer.
	payload, compressed := compressOrSkip(plaintext, dst[start+HeaderSize:start+HeaderSize:end-tagSize])
	dst = appendSealed(dst, k, id, payload, compressed)
	env := dst[start:len(dst):len(dst)]
	return Sealed{CID: SumCID(env), ID: id, Envelope: env}
}

// appendSealed appends the envelope of payload (compressed or not, as
// said) under the identity id. payload may lie in dst's spare capacity
// just past the header: it is encrypted in place.
func appendSealed(dst []byte, k Keys, id ID, payload []byte, compressed bool) []byte {
	start := len(dst)
	h := Header{Version: FormatV1, Compressed: compressed, Epoch: k.Epoch, ID: id}
	dst = h.appendTo(dst)
	var ad [HeaderSize]byte
	copy(ad[:], dst[start:])
	key, nonce := sealKey(k, id)
	return mustAEAD(key).Seal(dst, nonce[:], payload, ad[:])
}
