package keys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/hkdf"
)

// An epoch secret reaches a device sealed to it (docs/protocol/membership.md,
// "Revocation"): an anonymous sender makes an ephemeral X25519
// key, agrees a secret with the device's X25519 key (x25519.go), derives an
// XChaCha20-Poly1305 key and nonce from it with HKDF-SHA256, and encrypts:
//
//	sealed = ephemeral public key (32) || ciphertext of the secret (32) || tag (16)
//	okm    = HKDF-SHA256(ikm = X25519(ephemeral, recipient), salt = none,
//	                     info = "weft/v1 epoch-secret" || vault ID (32) ||
//	                            epoch (uint32 big-endian) || recipient device ID (32) ||
//	                            ephemeral public (32) || recipient X25519 public (32)),
//	         56 bytes: key = okm[0:32], nonce = okm[32:56]
//
// Each sealing uses a fresh ephemeral key, so key and nonce never repeat.
// The info binds the vault, the epoch and the recipient (both forms of its
// key: two ed25519 keys that differ only in the sign of x share one X25519
// key), so a sealed secret moved to another record, vault, epoch or device
// does not open.

// SealedSecretSize is the size of a sealed epoch secret.
const SealedSecretSize = 32 + 32 + chacha20poly1305.Overhead

const infoEpochSeal = "weft/v1 epoch-secret"

// sealKey derives the AEAD key and nonce of one sealing.
func sealKey(shared []byte, vault VaultID, epoch uint32, to DeviceID, ephPub, toX []byte) (key [32]byte, nonce [24]byte) {
	info := make([]byte, 0, len(infoEpochSeal)+32+4+32+32+32)
	info = append(info, infoEpochSeal...)
	info = append(info, vault[:]...)
	info = binary.BigEndian.AppendUint32(info, epoch)
	info = append(info, to[:]...)
	info = append(info, ephPub...)
	info = append(info, toX...)
	var okm [56]byte
	if _, err := io.ReadFull(hkdf.New(sha256.New, shared, nil, info), okm[:]); err != nil {
		panic("keys: invariant: hkdf cannot fail for 56 bytes: " + err.Error())
	}
	copy(key[:], okm[:32])
	copy(nonce[:], okm[32:])
	return key, nonce
}

// SealEpochSecret seals s, the secret of epoch in vault, to device to,
// with an ephemeral key read from rand (crypto/rand.Reader in production).
// It returns SealedSecretSize bytes, or ErrNotOnCurve when to has no X25519
// form.
func SealEpochSecret(rand io.Reader, to DeviceID, vault VaultID, epoch uint32, s EpochSecret) ([]byte, error) {
	toX, err := to.X25519()
	if err != nil {
		return nil, err
	}
	var eph [32]byte
	if _, err := io.ReadFull(rand, eph[:]); err != nil {
		return nil, fmt.Errorf("ephemeral key: %w", err)
	}
	ephPub, err := curve25519.X25519(eph[:], curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("ephemeral key: %w", err)
	}
	shared, err := curve25519.X25519(eph[:], toX[:])
	if err != nil {
		// Only a low-order point gives an all-zero secret; X25519 of a
		// curve point of ed25519's prime-order group never does.
		return nil, fmt.Errorf("device key %s: %w", to.Short(), ErrNotOnCurve)
	}
	key, nonce := sealKey(shared, vault, epoch, to, ephPub, toX[:])
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		panic("keys: invariant: XChaCha20-Poly1305 rejects a 32-byte key: " + err.Error())
	}
	out := make([]byte, 0, SealedSecretSize)
	out = append(out, ephPub...)
	return aead.Seal(out, nonce[:], s[:], nil), nil
}

// OpenEpochSecret opens a secret SealEpochSecret sealed to this device for
// epoch of vault. Any failure (wrong size, another recipient, vault or
// epoch, altered bytes) is ErrSealedSecret.
func (i *Identity) OpenEpochSecret(vault VaultID, epoch uint32, sealed []byte) (EpochSecret, error) {
	return openEpochSecret(i.priv, i.ID(), vault, epoch, sealed)
}

// openEpochSecret opens a secret sealed to me, whose ed25519 private key
// is priv.
func openEpochSecret(priv ed25519.PrivateKey, me DeviceID, vault VaultID, epoch uint32, sealed []byte) (EpochSecret, error) {
	var s EpochSecret
	if len(sealed) != SealedSecretSize {
		return s, fmt.Errorf("%w: %d bytes, want %d", ErrSealedSecret, len(sealed), SealedSecretSize)
	}
	x := x25519Private(priv)
	myX, err := curve25519.X25519(x[:], curve25519.Basepoint)
	if err != nil {
		panic("keys: invariant: X25519 with the base point cannot fail: " + err.Error())
	}
	ephPub := sealed[:32]
	shared, err := curve25519.X25519(x[:], ephPub)
	if err != nil {
		return s, fmt.Errorf("%w: low-order ephemeral key", ErrSealedSecret)
	}
	key, nonce := sealKey(shared, vault, epoch, me, ephPub, myX)
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		panic("keys: invariant: XChaCha20-Poly1305 rejects a 32-byte key: " + err.Error())
	}
	plain, err := aead.Open(nil, nonce[:], sealed[32:], nil)
	if err != nil {
		return s, fmt.Errorf("%w: epoch %d", ErrSealedSecret, epoch)
	}
	copy(s[:], plain)
	return s, nil
}

// NewEpochSecret draws a random epoch secret from rand.
func NewEpochSecret(rand io.Reader) (EpochSecret, error) {
	var s EpochSecret
	if _, err := io.ReadFull(rand, s[:]); err != nil {
		return s, fmt.Errorf("epoch secret: %w", err)
	}
	return s, nil
}
