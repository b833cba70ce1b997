package member

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
)

// Revocation and key epochs (docs/protocol/membership.md, "Revocation").
// A revocation record starts epoch current+1 with a random secret sealed to
// every remaining member, and names the revoked device's last accepted
// sequence number (Upto): its entries up to Upto stay valid history, any
// later one is refused by every device and relay (CheckAuthor). An add
// record carries every epoch secret after 0 sealed to the new device. So
// each device can recover all the epoch secrets it may know from the
// membership log and its own key alone (EpochSecrets): nothing besides the
// log needs storing.

// checkAddKeys checks an add record's sealed keys: one per epoch after 0
// up to the current one, each to the added device.
func (s *State) checkAddKeys(r Record) error {
	if len(r.Keys) != int(s.Epoch) {
		return fmt.Errorf("%w: add in epoch %d carries %d sealed keys, want %d", ErrBadOp, s.Epoch, len(r.Keys), s.Epoch)
	}
	for i, k := range r.Keys {
		if k.Device != r.Device {
			return fmt.Errorf("%w: add seals key %d to %s, not the added device", ErrBadOp, i, k.Device)
		}
		if len(k.Sealed) != keys.SealedSecretSize {
			return fmt.Errorf("%w: sealed key %d of %d bytes, want %d", ErrBadOp, i, len(k.Sealed), keys.SealedSecretSize)
		}
	}
	return nil
}

// revokeRecipients returns who a revocation of d seals the new epoch's
// secret to, in ID order: every member that remains and, in a recoverable
// vault, the vault key (so the recovery phrase opens every epoch).
func (s *State) revokeRecipients(d keys.DeviceID) []keys.DeviceID {
	var want []keys.DeviceID
	for _, m := range s.Members() {
		if m != d {
			want = append(want, m)
		}
	}
	if s.Recoverable() {
		want = append(want, s.vault.Recipient())
		slices.SortFunc(want, func(a, b keys.DeviceID) int { return bytes.Compare(a[:], b[:]) })
	}
	return want
}

// checkRevokeKeys checks a revocation's sealed keys: exactly one to each
// recipient revokeRecipients names, sorted by device ID.
func (s *State) checkRevokeKeys(r Record) error {
	want := s.revokeRecipients(r.Device)
	if len(r.Keys) != len(want) {
		return fmt.Errorf("%w: revocation seals %d keys for %d recipients (remaining members, and the vault key of a recoverable vault)", ErrBadOp, len(r.Keys), len(want))
	}
	for i, k := range r.Keys {
		if k.Device != want[i] {
			return fmt.Errorf("%w: revocation key %d is for %s, want %s (remaining members in ID order)", ErrBadOp, i, k.Device, want[i])
		}
		if len(k.Sealed) != keys.SealedSecretSize {
			return fmt.Errorf("%w: sealed key %d of %d bytes, want %d", ErrBadOp, i, len(k.Sealed), keys.SealedSecretSize)
		}
	}
	return nil
}

// Upto returns, for a revoked device, the last sequence number of its log
// that stays valid, and true; for any other device 0 and false.
func (s *State) Upto(d keys.DeviceID) (uint64, bool) {
	u, ok := s.upto[d]
	return u, ok
}

// CheckAuthor decides whether an entry of author with sequence seq may be
// accepted: a current member's always; a revoked device's only up to the
// Upto of its revocation (ErrRevokedEntry beyond it); anyone else's never
// (ErrNotMember). It does not check the entry itself.
func (s *State) CheckAuthor(author keys.DeviceID, seq uint64) error {
	if _, ok := s.members[author]; ok {
		return nil
	}
	if u, ok := s.upto[author]; ok {
		if seq <= u {
			return nil
		}
		return fmt.Errorf("entry %s/%d: %w (its last valid entry is %d)", author, seq, ErrRevokedEntry, u)
	}
	return fmt.Errorf("entry author %s: %w", author, ErrNotMember)
}

// RevokeOp builds the operation fields of a record that revokes d, for
// Next: a new epoch secret drawn from rand, sealed to each remaining
// member. upto is d's last sequence number to keep (the revoking admin's
// head of d's log). It returns the new secret too, though the signer can
// also recover it from the record (it is a remaining member). The record
// still has to pass Apply.
func (s *State) RevokeOp(rand io.Reader, d keys.DeviceID, upto uint64) (Record, keys.EpochSecret, error) {
	secret, err := keys.NewEpochSecret(rand)
	if err != nil {
		return Record{}, secret, err
	}
	epoch := s.Epoch + 1
	op := Record{Op: OpRevoke, Device: d, Epoch: epoch, Upto: upto}
	for _, m := range s.revokeRecipients(d) {
		sealed, err := keys.SealEpochSecret(rand, m, s.Vault, epoch, secret)
		if err != nil {
			return Record{}, secret, fmt.Errorf("sealing epoch %d to %s: %w", epoch, m, err)
		}
		op.Keys = append(op.Keys, SealedKey{Device: m, Sealed: sealed})
	}
	if len(op.Keys) > MaxKeys {
		return Record{}, secret, fmt.Errorf("%w: %d remaining members, at most %d", ErrTooLarge, len(op.Keys), MaxKeys)
	}
	return op, secret, nil
}

// AddOp builds the operation fields of a record that admits d with role,
// for Next: every epoch secret after 0 up to the current epoch, taken from
// secrets, sealed to d with keys from rand. The record still has to pass
// Apply.
func (s *State) AddOp(rand io.Reader, d keys.DeviceID, role Role, secrets map[uint32]keys.EpochSecret) (Record, error) {
	op := Record{Op: OpAdd, Device: d, Role: role}
	if s.Epoch > MaxKeys {
		return Record{}, fmt.Errorf("%w: %d key epochs, an add can carry at most %d", ErrTooLarge, s.Epoch, MaxKeys)
	}
	for e := uint32(1); e <= s.Epoch; e++ {
		secret, ok := secrets[e]
		if !ok {
			return Record{}, fmt.Errorf("admitting %s: %w: %d", d, ErrMissingEpoch, e)
		}
		sealed, err := keys.SealEpochSecret(rand, d, s.Vault, e, secret)
		if err != nil {
			return Record{}, fmt.Errorf("sealing epoch %d to %s: %w", e, d, err)
		}
		op.Keys = append(op.Keys, SealedKey{Device: d, Sealed: sealed})
	}
	return op, nil
}

// EpochSecrets recovers from the membership log every epoch secret id may
// know: epoch 0 as given (keys.RootSecret.Epoch0 or
// keys.VaultSecrets.Epoch0), each later epoch from a revocation that sealed
// it to id or from the add record that admitted id. Epochs id was never
// given (it was revoked, or the log has none for it) are absent. A sealed
// secret addressed to id that does not open is reported in the error
// (wrapping keys.ErrSealedSecret), and the secrets that did open are still
// returned.
func (s *State) EpochSecrets(id *keys.Identity, epoch0 keys.EpochSecret) (map[uint32]keys.EpochSecret, error) {
	me := id.ID()
	out := map[uint32]keys.EpochSecret{0: epoch0}
	var errs []error
	open := func(epoch uint32, sealed []byte) {
		if _, ok := out[epoch]; ok {
			return
		}
		secret, err := id.OpenEpochSecret(s.Vault, epoch, sealed)
		if err != nil {
			errs = append(errs, err)
			return
		}
		out[epoch] = secret
	}
	for _, r := range s.records {
		switch r.Op {
		case OpRevoke:
			for _, k := range r.Keys {
				if k.Device == me {
					open(r.Epoch, k.Sealed)
				}
			}
		case OpAdd, OpRecover:
			if r.Device == me {
				for i, k := range r.Keys {
					open(uint32(i+1), k.Sealed)
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// recoverySecrets opens every epoch secret of a recoverable vault with the
// vault key: epoch n > 0 from the revocation that started it, which sealed
// it to the vault key too (revokeRecipients). Epoch 0 derives from the
// root secret and is not in the map.
func (s *State) recoverySecrets(vk *keys.VaultKey) (map[uint32]keys.EpochSecret, error) {
	to := vk.Public().Recipient()
	out := map[uint32]keys.EpochSecret{}
	for _, r := range s.records {
		if r.Op != OpRevoke {
			continue
		}
		for _, k := range r.Keys {
			if k.Device != to {
				continue
			}
			secret, err := vk.OpenEpochSecret(s.Vault, r.Epoch, k.Sealed)
			if err != nil {
				return nil, fmt.Errorf("epoch %d: %w", r.Epoch, err)
			}
			out[r.Epoch] = secret
		}
	}
	return out, nil
}
