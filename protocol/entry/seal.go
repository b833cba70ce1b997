package entry

import (
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/weftsync/weft/protocol/keys"
)

// adDomain starts the additional data of a body's AEAD.
const adDomain = "weft/body/v1\x00"

// bodyAD returns the additional data that binds a sealed body to its entry:
// adDomain || vault (32) || author (32) || seq (8, big-endian) || epoch (4,
// big-endian). A body moved under another entry (another vault, author,
// sequence number or epoch) fails to open.
func bodyAD(vault keys.VaultID, author keys.DeviceID, seq uint64, epoch uint32) []byte {
	ad := make([]byte, 0, len(adDomain)+32+32+8+4)
	ad = append(ad, adDomain...)
	ad = append(ad, vault[:]...)
	ad = append(ad, author[:]...)
	ad = binary.BigEndian.AppendUint64(ad, seq)
	return binary.BigEndian.AppendUint32(ad, epoch)
}

// seal encrypts plain with XChaCha20-Poly1305 under key, with a fresh random
// 24-byte nonce read from rand, and returns nonce || ciphertext || tag.
func seal(plain []byte, key *[32]byte, ad []byte, rand io.Reader) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		panic("entry: invariant: XChaCha20-Poly1305 with a 32-byte key: " + err.Error())
	}
	out := make([]byte, nonceSize, nonceSize+len(plain)+tagSize)
	if _, err := io.ReadFull(rand, out); err != nil {
		return nil, fmt.Errorf("reading body nonce: %w", err)
	}
	return aead.Seal(out, out[:nonceSize], plain, ad), nil
}

// open reverses seal. Any failure is ErrBodyAuth.
func open(sealed []byte, key *[32]byte, ad []byte) ([]byte, error) {
	if len(sealed) < nonceSize+tagSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than nonce and tag", ErrBodyAuth, len(sealed))
	}
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		panic("entry: invariant: XChaCha20-Poly1305 with a 32-byte key: " + err.Error())
	}
	plain, err := aead.Open(nil, sealed[:nonceSize], sealed[nonceSize:], ad)
	if err != nil {
		return nil, ErrBodyAuth
	}
	return plain, nil
}

// OpenBody decrypts and checks e's body with the keys of e's epoch. In order
// it rejects: keys of another epoch (ErrWrongEpoch); a body that fails
// authentication (ErrBodyAuth); a plaintext that is not a well-formed,
// canonical body within limits (ErrMalformed, ErrFieldTooLarge,
// ErrTooManyVersions, ErrNonCanonical); a version breaking the rules on
// Version or a path breaking ValidatePath (ErrBadVersion, ErrBadPath,
// ErrMalformed for supersedes order); public headers that differ from the
// body (ErrHeaderMismatch).
//
// OpenBody does not check e's signature; call it on entries from Validate
// or Decode of trusted storage.
func OpenBody(e *Entry, k keys.EpochKeys) (*Body, error) { return openBody(e, k, true) }

// openBody is OpenBody, with the body's canonical-form check only when
// canonical is set (OpenStoredBody clears it).
func openBody(e *Entry, k keys.EpochKeys, canonical bool) (*Body, error) {
	if k.Epoch != e.w.Epoch {
		return nil, fmt.Errorf("opening body: keys of epoch %d, entry of epoch %d: %w", k.Epoch, e.w.Epoch, ErrWrongEpoch)
	}
	ad := bodyAD(e.vault, e.author, e.w.Seq, e.w.Epoch)
	plain, err := open(e.w.Body, &k.Body, ad)
	if err != nil {
		return nil, fmt.Errorf("opening body: %w", err)
	}
	b, err := decodeBodyForm(plain, canonical)
	if err != nil {
		return nil, fmt.Errorf("decoding body: %w", err)
	}
	if named := b.Author != ""; named != (e.w.Format == FormatV3) {
		return nil, fmt.Errorf("decoding body: %w: a format-%d entry whose body has an author name: %v", ErrMalformed, e.w.Format, named)
	}
	if err := b.validate(e.author, e.w.Seq); err != nil {
		return nil, fmt.Errorf("validating body: %w", err)
	}
	if err := matchHeaders(e.headers, b); err != nil {
		return nil, fmt.Errorf("validating body: %w", err)
	}
	return b, nil
}
