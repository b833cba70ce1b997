package keys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
)

// vaultIDDomain prefixes the public key in the hash that makes a vault ID,
// so a vault ID is never the SHA-256 of a bare key used elsewhere.
const vaultIDDomain = "weft/v1 vault-id"

// VaultKey is a vault's ed25519 signing key. Its seed is derived from the
// root secret (HKDF info "weft/v1 vault-key"), so only a holder of the root
// secret can sign with it; its public key hashes to the vault ID. It signs
// the vault's genesis membership record, which lets anyone, a relay
// included, check that a genesis was made by the vault's owner and not by
// someone who merely knows the vault ID. It is safe for concurrent use.
type VaultKey struct {
	priv ed25519.PrivateKey
}

// VaultKey derives the vault's signing key.
func (r RootSecret) VaultKey() *VaultKey {
	seed := derive32(r[:], infoVaultKey)
	return &VaultKey{priv: ed25519.NewKeyFromSeed(seed[:])}
}

// Public returns the vault's public key.
func (k *VaultKey) Public() VaultPublicKey {
	var p VaultPublicKey
	copy(p[:], k.priv.Public().(ed25519.PublicKey))
	return p
}

// Sign signs msg with the vault key.
func (k *VaultKey) Sign(msg []byte) []byte { return ed25519.Sign(k.priv, msg) }

// VaultPublicKey is the public half of a VaultKey: public, like the vault ID.
type VaultPublicKey [ed25519.PublicKeySize]byte

func (p VaultPublicKey) String() string { return hex.EncodeToString(p[:]) }

// ID returns the vault ID that p names:
// SHA-256("weft/v1 vault-id" || p), 32 bytes.
func (p VaultPublicKey) ID() VaultID {
	h := sha256.New()
	h.Write([]byte(vaultIDDomain))
	h.Write(p[:])
	var v VaultID
	h.Sum(v[:0])
	return v
}

// Verify reports whether sig is the vault key's valid signature of msg.
func (p VaultPublicKey) Verify(msg, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(ed25519.PublicKey(p[:]), msg, sig)
}

// Matches reports whether p is the public key of the vault named v, that is
// whether p hashes to v. It needs no secret.
func (v VaultID) Matches(p VaultPublicKey) bool { return p.ID() == v }

// Recipient is the vault key as the recipient of sealed epoch secrets. An
// ed25519 public key like a device's, it has the same X25519 form, so an
// epoch secret is sealed to it exactly as to a device (SealEpochSecret):
// in a recoverable vault every new epoch's secret is also sealed to it, so
// that the recovery phrase, which alone derives the vault key, opens every
// epoch (docs/security.md, "Recovery").
func (p VaultPublicKey) Recipient() DeviceID { return DeviceID(p) }

// OpenEpochSecret opens a secret sealed to the vault key's Recipient for
// epoch of vault. Any failure is ErrSealedSecret.
func (k *VaultKey) OpenEpochSecret(vault VaultID, epoch uint32, sealed []byte) (EpochSecret, error) {
	return openEpochSecret(k.priv, k.Public().Recipient(), vault, epoch, sealed)
}
