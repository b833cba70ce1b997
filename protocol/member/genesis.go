package member

import (
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// vaultSigDomain prefixes what the vault key signs, so a vault signature
// can never pass for a device's record signature or anything else.
const vaultSigDomain = "weft/member/v1 vault\x00"

// Genesis makes the first record of a new vault: id admits itself as admin.
// The vault is the one vk names (vk.Public().ID()); vk signs the record
// bound to id (Device and Signer are id), then id signs it as every record.
// Only a holder of the vault's root secret has vk, so only it can make a
// genesis that State.Apply and Decode accept: someone who merely knows the
// vault ID cannot (docs/security.md, "Vault-ID squatting").
func Genesis(id *keys.Identity, vk *keys.VaultKey, timeMs int64) Record {
	pub := vk.Public()
	r := Record{
		Format: Format, Vault: pub.ID(), Seq: 1, Op: OpGenesis, Device: id.ID(), Role: RoleAdmin,
		Time: timeMs, VaultKey: pub[:], Signer: id.ID(),
	}
	r.VaultSig = vk.Sign(r.vaultSigningBytes())
	r.Sign(id)
	return r
}

// vaultSigningBytes is what the vault signature covers: vaultSigDomain and
// the record with VaultSig and Sig empty. Signer is included, so the
// signature admits one admin device and cannot be moved to another.
func (r Record) vaultSigningBytes() []byte {
	r.VaultSig, r.Sig = nil, nil
	b, err := encMode.Marshal(r)
	if err != nil {
		panic("member: invariant: encoding a record cannot fail: " + err.Error())
	}
	return append([]byte(vaultSigDomain), b...)
}

// checkVaultProof checks that a genesis proves its vault ID: its vault key
// hashes to Vault (else ErrVaultKey) and signs the record (else
// ErrVaultSignature). It needs no key, so relays run it too.
func (r Record) checkVaultProof() error {
	var pub keys.VaultPublicKey
	if len(r.VaultKey) != len(pub) {
		return fmt.Errorf("%w: got a %d-byte vault key, want %d bytes", ErrVaultKey, len(r.VaultKey), len(pub))
	}
	copy(pub[:], r.VaultKey)
	if !r.Vault.Matches(pub) {
		return fmt.Errorf("%w: key %s names vault %s, not %s", ErrVaultKey, pub, pub.ID(), r.Vault)
	}
	if !pub.Verify(r.vaultSigningBytes(), r.VaultSig) {
		return ErrVaultSignature
	}
	return nil
}
