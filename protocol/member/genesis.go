package member

import (
	"fmt"
	"io"

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
// vault ID cannot (docs/security.md, "Vault-ID squatting"). The record is
// format 1: no name, no settings (GenesisWith sets them).
func Genesis(id *keys.Identity, vk *keys.VaultKey, timeMs int64) Record {
	return GenesisWith(id, vk, "", 0, timeMs)
}

// GenesisWith is Genesis with the creating device's name and the vault's
// settings (Flag*); with either set the record is format 2. A vault made
// with FlagRecoverable keeps it for good.
func GenesisWith(id *keys.Identity, vk *keys.VaultKey, name string, flags uint64, timeMs int64) Record {
	pub := vk.Public()
	r := Record{
		Format: Format, Vault: pub.ID(), Seq: 1, Op: OpGenesis, Device: id.ID(), Role: RoleAdmin,
		Time: timeMs, Name: name, Flags: flags, VaultKey: pub[:], Signer: id.ID(),
	}
	if name != "" || flags != 0 {
		r.Format = Format2
	}
	r.VaultSig = vk.Sign(r.vaultSigningBytes())
	r.Sign(id)
	return r
}

// Recover makes the record by which id, a new device, is admitted as admin
// of the vault on the strength of the recovery phrase alone (root): the
// vault key signs the record bound to id and to the head it chains onto,
// like a genesis. Every epoch secret after 0 is opened from the log with
// the vault key (each revocation of a recoverable vault seals its new
// secret to it) and sealed to id, as an add does, so id reads every epoch
// without keeping the phrase. It fails with ErrNotRecoverable in a vault
// made without FlagRecoverable. The record still has to pass Apply.
func (s *State) Recover(rand io.Reader, id *keys.Identity, root keys.RootSecret, name string, timeMs int64) (Record, error) {
	vk := root.VaultKey()
	pub := vk.Public()
	if pub.ID() != s.Vault {
		return Record{}, fmt.Errorf("%w: the phrase names vault %s, not %s", ErrVaultKey, pub.ID(), s.Vault)
	}
	if !s.Recoverable() {
		return Record{}, ErrNotRecoverable
	}
	secrets, err := s.recoverySecrets(vk)
	if err != nil {
		return Record{}, err
	}
	op, err := s.AddOp(rand, id.ID(), RoleAdmin, secrets)
	if err != nil {
		return Record{}, err
	}
	r := Record{
		Format: Format2, Vault: s.Vault, Seq: s.Seq + 1, Prev: s.Head.Bytes(), Op: OpRecover,
		Device: id.ID(), Role: RoleAdmin, Keys: op.Keys, Time: timeMs, Name: name,
		VaultKey: pub[:], Signer: id.ID(),
	}
	if len(r.Keys) == 0 {
		r.Keys = nil
	}
	r.VaultSig = vk.Sign(r.vaultSigningBytes())
	r.Sign(id)
	return r, nil
}

// vaultSigningBytes is what the vault signature covers: vaultSigDomain and
// the record with VaultSig and Sig empty. Signer is included, so the
// signature admits one admin device and cannot be moved to another.
func (r Record) vaultSigningBytes() []byte {
	r.VaultSig, r.Sig = nil, nil
	return append([]byte(vaultSigDomain), r.marshal()...)
}

// checkVaultProof checks that a genesis or a recovery proves its vault ID: its vault key
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
