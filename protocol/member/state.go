package member

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/keys"
)

// State is the membership of one vault folded from its record log. The zero
// State for a vault accepts only a genesis record. State is not safe for
// concurrent use.
type State struct {
	Vault   keys.VaultID
	Seq     uint64  // sequence of the last applied record; 0 before genesis
	Head    cid.Cid // CID of the last applied record
	Epoch   uint32  // current key epoch
	members map[keys.DeviceID]Role
	revoked map[keys.DeviceID]bool
	upto    map[keys.DeviceID]uint64 // revoked device -> last accepted sequence number
	relays  []string
	records []Record
}

// NewState returns the empty membership of vault.
func NewState(vault keys.VaultID) *State {
	return &State{Vault: vault, members: map[keys.DeviceID]Role{}, revoked: map[keys.DeviceID]bool{}, upto: map[keys.DeviceID]uint64{}}
}

// Role returns d's role and whether d is a current member.
func (s *State) Role(d keys.DeviceID) (Role, bool) {
	r, ok := s.members[d]
	return r, ok
}

// IsMember reports whether d is a current (not revoked) member.
func (s *State) IsMember(d keys.DeviceID) bool { _, ok := s.members[d]; return ok }

// IsRevoked reports whether d was a member and has been revoked.
func (s *State) IsRevoked(d keys.DeviceID) bool { return s.revoked[d] }

// Members returns the current members sorted by device ID.
func (s *State) Members() []keys.DeviceID {
	out := make([]keys.DeviceID, 0, len(s.members))
	for d := range s.members {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b keys.DeviceID) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// Relays returns the vault's relays in the order they were added.
func (s *State) Relays() []string { return slices.Clone(s.relays) }

// Records returns the applied records in order. The caller must not modify
// them.
func (s *State) Records() []Record { return s.records }

// Apply validates r against the state and applies it. It rejects, each with
// its own error: another vault, a sequence that is not Seq+1, a previous
// hash that is not Head, a bad signature, a signer that is not an admin
// (a genesis record signs itself), a genesis whose vault key does not hash
// to the vault ID (ErrVaultKey) or whose vault signature fails
// (ErrVaultSignature), and an operation that makes no sense in this state.
// On error the state is unchanged.
func (s *State) Apply(r Record) error {
	if r.Format != Format {
		return fmt.Errorf("%w: %d", ErrUnknownFormat, r.Format)
	}
	if r.Vault != s.Vault {
		return ErrOtherVault
	}
	if r.Seq != s.Seq+1 {
		return fmt.Errorf("%w: got %d, want %d", ErrSequence, r.Seq, s.Seq+1)
	}
	if s.Seq == 0 {
		if len(r.Prev) != 0 {
			return fmt.Errorf("%w: genesis names a previous record", ErrPrevMismatch)
		}
	} else if !bytes.Equal(r.Prev, s.Head.Bytes()) {
		return ErrPrevMismatch
	}
	if !r.Signer.Verify(r.signingBytes(), r.Sig) {
		return ErrBadSignature
	}
	if err := s.checkOp(r); err != nil {
		return err
	}
	switch r.Op {
	case OpGenesis, OpAdd:
		s.members[r.Device] = r.Role
	case OpRevoke:
		delete(s.members, r.Device)
		s.revoked[r.Device] = true
		s.upto[r.Device] = r.Upto
		s.Epoch = r.Epoch
	case OpAddRelay:
		s.relays = append(s.relays, r.Relay)
	case OpRemoveRelay:
		s.relays = slices.DeleteFunc(s.relays, func(a string) bool { return a == r.Relay })
	}
	s.Seq = r.Seq
	s.Head = r.CID()
	s.records = append(s.records, r)
	return nil
}

func (s *State) checkOp(r Record) error {
	if r.Op != OpRevoke && (r.Epoch != 0 || r.Upto != 0) {
		return fmt.Errorf("%w: %s with an epoch or upto", ErrBadOp, r.Op)
	}
	if r.Op != OpRevoke && r.Op != OpAdd && len(r.Keys) > 0 {
		return fmt.Errorf("%w: %s with sealed keys", ErrBadOp, r.Op)
	}
	if s.Seq == 0 {
		if r.Op != OpGenesis || r.Device != r.Signer || r.Role != RoleAdmin {
			return fmt.Errorf("%w: the first record must be a genesis that admits its signer as admin", ErrBadOp)
		}
		return r.checkVaultProof()
	}
	if r.VaultKey != nil || r.VaultSig != nil {
		return fmt.Errorf("%w: %s with a vault key or signature", ErrBadOp, r.Op)
	}
	if role, ok := s.members[r.Signer]; !ok || role != RoleAdmin {
		return ErrNotAdmin
	}
	switch r.Op {
	case OpAdd:
		if r.Role != RoleMember && r.Role != RoleAdmin {
			return fmt.Errorf("%w: unknown role %d", ErrBadOp, r.Role)
		}
		if s.revoked[r.Device] {
			return fmt.Errorf("%w: %s", ErrRevoked, r.Device)
		}
		if _, ok := s.members[r.Device]; ok {
			return fmt.Errorf("%w: %s is already a member", ErrBadOp, r.Device)
		}
		if err := s.checkAddKeys(r); err != nil {
			return err
		}
	case OpRevoke:
		if _, ok := s.members[r.Device]; !ok {
			return fmt.Errorf("%w: %s is not a member", ErrBadOp, r.Device)
		}
		if r.Device == r.Signer {
			return fmt.Errorf("%w: an admin cannot revoke itself", ErrBadOp)
		}
		if r.Epoch != s.Epoch+1 {
			return fmt.Errorf("%w: revocation must start epoch %d, got %d", ErrBadOp, s.Epoch+1, r.Epoch)
		}
		if err := s.checkRevokeKeys(r); err != nil {
			return err
		}
	case OpAddRelay:
		if r.Relay == "" || slices.Contains(s.relays, r.Relay) {
			return fmt.Errorf("%w: relay %q is empty or already listed", ErrBadOp, r.Relay)
		}
	case OpRemoveRelay:
		if !slices.Contains(s.relays, r.Relay) {
			return fmt.Errorf("%w: relay %q is not listed", ErrBadOp, r.Relay)
		}
	default:
		return fmt.Errorf("%w: %s", ErrBadOp, r.Op)
	}
	return nil
}

// Next makes the record that follows the state's head, signed by admin.
// Only the operation fields of op are read (Op, Device, Role, Relay, Epoch,
// Upto, Keys).
// The result still has to pass Apply.
func (s *State) Next(admin *keys.Identity, op Record, timeMs int64) Record {
	r := Record{
		Format: Format, Vault: s.Vault, Seq: s.Seq + 1, Prev: s.Head.Bytes(),
		Op: op.Op, Device: op.Device, Role: op.Role, Relay: op.Relay, Epoch: op.Epoch,
		Upto: op.Upto, Keys: op.Keys, Time: timeMs,
	}
	if len(r.Keys) == 0 {
		r.Keys = nil // the canonical "no keys"
	}
	r.Sign(admin)
	return r
}
