package member

import (
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// recoverProofDomain prefixes what the vault key signs to ask for a
// vault's membership log (/weft/recover/1), so a proof can never pass for
// a record's vault signature or anything else.
const recoverProofDomain = "weft/recover/v1\x00"

func recoverProofBytes(vault keys.VaultID, from, to keys.DeviceID) []byte {
	b := make([]byte, 0, len(recoverProofDomain)+3*32)
	b = append(b, recoverProofDomain...)
	b = append(b, vault[:]...)
	b = append(b, from[:]...)
	return append(b, to[:]...)
}

// RecoveryProof is what a recovering device (from) shows the device or
// relay it asks for the vault's membership log (to): the vault key's
// signature binding both, so only a holder of the recovery phrase gets
// the log from a peer that serves only members, and a proof shown to one
// peer cannot be replayed to another by it.
func RecoveryProof(vk *keys.VaultKey, from, to keys.DeviceID) []byte {
	return vk.Sign(recoverProofBytes(vk.Public().ID(), from, to))
}

// CheckRecoveryProof checks a RecoveryProof against the vault key that the
// vault's genesis carries (every genesis does): ErrVaultSignature for a
// proof that does not verify, and only then ErrNotRecoverable for a vault
// made without FlagRecoverable, so that someone without the phrase learns
// nothing of the vault from the answer.
func CheckRecoveryProof(genesis Record, from, to keys.DeviceID, proof []byte) error {
	if genesis.Op != OpGenesis {
		return fmt.Errorf("%w: the first record is not a genesis", ErrBadOp)
	}
	var pub keys.VaultPublicKey
	if len(genesis.VaultKey) != len(pub) {
		return ErrVaultKey
	}
	copy(pub[:], genesis.VaultKey)
	if !pub.Verify(recoverProofBytes(genesis.Vault, from, to), proof) {
		return fmt.Errorf("%w: recovery proof", ErrVaultSignature)
	}
	if genesis.Flags&FlagRecoverable == 0 {
		return ErrNotRecoverable
	}
	return nil
}
