package member

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

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
	names   map[keys.DeviceID]string
	flags   uint64              // the vault's settings (Flag*)
	vault   keys.VaultPublicKey // from the genesis
	records []Record
}

// NewState returns the empty membership of vault.
func NewState(vault keys.VaultID) *State {
	return &State{
		Vault: vault, members: map[keys.DeviceID]Role{}, revoked: map[keys.DeviceID]bool{},
		upto: map[keys.DeviceID]uint64{}, names: map[keys.DeviceID]string{},
	}
}

// Name returns d's name as membership records it ("" when none was
// given: a format-1 vault, or a device added without one). A revoked
// device keeps its last name.
func (s *State) Name(d keys.DeviceID) string { return s.names[d] }

// Flags returns the vault's settings (Flag*).
func (s *State) Flags() uint64 { return s.flags }

// Recoverable reports whether the vault's recovery phrase can admit a
// device (FlagRecoverable).
func (s *State) Recoverable() bool { return s.flags&FlagRecoverable != 0 }

// VaultKey returns the vault's public key, from the genesis.
func (s *State) VaultKey() keys.VaultPublicKey { return s.vault }

// Admins returns the current admins sorted by device ID.
func (s *State) Admins() []keys.DeviceID {
	var out []keys.DeviceID
	for _, d := range s.Members() {
		if s.members[d] == RoleAdmin {
			out = append(out, d)
		}
	}
	return out
}

// CanAdmit reports whether d may sign a record admitting a device with
// role: an admin always, a member only a member and only when the vault
// lets every member invite (FlagMembersInvite).
func (s *State) CanAdmit(d keys.DeviceID, role Role) bool {
	switch r, ok := s.members[d]; {
	case !ok:
		return false
	case r == RoleAdmin:
		return true
	default:
		return role == RoleMember && s.flags&FlagMembersInvite != 0
	}
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
	if r.Format != Format && r.Format != Format2 && r.Format != Format3 {
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
	case OpGenesis, OpAdd, OpRecover:
		s.members[r.Device] = r.Role
		if r.Name != "" {
			s.names[r.Device] = r.Name
		}
		if r.Op == OpGenesis {
			s.flags = r.Flags
			copy(s.vault[:], r.VaultKey)
		}
	case OpSetRole:
		s.members[r.Device] = r.Role
	case OpRename:
		s.names[r.Device] = r.Name
	case OpSettings:
		s.flags = r.Flags
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
	if r.Op >= OpRecover && r.Format < Format2 {
		return fmt.Errorf("%w: %s needs format %d", ErrBadOp, r.Op, Format2)
	}
	if r.Op != OpRevoke && (r.Epoch != 0 || r.Upto != 0) {
		return fmt.Errorf("%w: %s with an epoch or upto", ErrBadOp, r.Op)
	}
	if r.Op != OpRevoke && r.Op != OpAdd && r.Op != OpRecover && len(r.Keys) > 0 {
		return fmt.Errorf("%w: %s with sealed keys", ErrBadOp, r.Op)
	}
	if r.Words != "" {
		if r.Op != OpAdd {
			return fmt.Errorf("%w: %s with a join's words", ErrBadOp, r.Op)
		}
		if err := CheckWords(r.Words); err != nil {
			return fmt.Errorf("%w: %w", ErrBadOp, err)
		}
	}
	if r.Op != OpGenesis && r.Op != OpSettings && r.Flags != 0 {
		return fmt.Errorf("%w: %s with vault settings", ErrBadOp, r.Op)
	}
	if r.Flags&^knownFlags != 0 {
		return fmt.Errorf("%w: unknown vault settings %#x", ErrBadOp, r.Flags&^knownFlags)
	}
	switch r.Op {
	case OpGenesis, OpAdd, OpRecover, OpRename:
		if r.Name != "" || r.Op == OpRename {
			if err := CheckName(r.Name); err != nil {
				return fmt.Errorf("%w: %w", ErrBadOp, err)
			}
		}
	default:
		if r.Name != "" {
			return fmt.Errorf("%w: %s with a device name", ErrBadOp, r.Op)
		}
	}
	if s.Seq == 0 {
		if r.Op != OpGenesis || r.Device != r.Signer || r.Role != RoleAdmin {
			return fmt.Errorf("%w: the first record must be a genesis that admits its signer as admin", ErrBadOp)
		}
		return r.checkVaultProof()
	}
	if r.Op == OpRecover {
		return s.checkRecover(r)
	}
	if r.VaultKey != nil || r.VaultSig != nil {
		return fmt.Errorf("%w: %s with a vault key or signature", ErrBadOp, r.Op)
	}
	signerRole, signerIsMember := s.members[r.Signer]
	switch r.Op {
	case OpAdd:
		// Checked below against the role it admits.
	case OpRename:
		if r.Signer != r.Device && signerRole != RoleAdmin {
			return fmt.Errorf("%w: only the device itself or an admin renames it", ErrNotAdmin)
		}
		if !signerIsMember {
			return ErrNotAdmin
		}
	default:
		if !signerIsMember || signerRole != RoleAdmin {
			return ErrNotAdmin
		}
	}
	switch r.Op {
	case OpAdd:
		if r.Role != RoleMember && r.Role != RoleAdmin {
			return fmt.Errorf("%w: unknown role %d", ErrBadOp, r.Role)
		}
		if !s.CanAdmit(r.Signer, r.Role) {
			return ErrNotAdmin
		}
		if err := s.checkNewcomer(r.Device); err != nil {
			return err
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
	case OpSetRole:
		cur, ok := s.members[r.Device]
		if !ok {
			return fmt.Errorf("%w: %s is not a member", ErrBadOp, r.Device)
		}
		if r.Role != RoleMember && r.Role != RoleAdmin {
			return fmt.Errorf("%w: unknown role %d", ErrBadOp, r.Role)
		}
		if r.Role == cur {
			return fmt.Errorf("%w: %s is already %s", ErrBadOp, r.Device, cur)
		}
		if cur == RoleAdmin && len(s.Admins()) == 1 {
			return ErrLastAdmin
		}
	case OpRename:
		if _, ok := s.members[r.Device]; !ok {
			return fmt.Errorf("%w: %s is not a member", ErrBadOp, r.Device)
		}
	case OpSettings:
		if r.Flags&FlagRecoverable != s.flags&FlagRecoverable {
			return fmt.Errorf("%w: whether a vault is recoverable is fixed when it is made", ErrBadOp)
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

// checkRecover checks a recovery: the vault is recoverable, the vault key
// admits the signer itself as admin, the signer is new to the vault, and
// it carries every epoch secret after 0 as an add does.
func (s *State) checkRecover(r Record) error {
	if !s.Recoverable() {
		return ErrNotRecoverable
	}
	if r.Device != r.Signer || r.Role != RoleAdmin {
		return fmt.Errorf("%w: a recovery admits its signer as admin", ErrBadOp)
	}
	if err := r.checkVaultProof(); err != nil {
		return err
	}
	if err := s.checkNewcomer(r.Device); err != nil {
		return err
	}
	return s.checkAddKeys(r)
}

// checkNewcomer refuses to admit a member, or a device that was revoked
// (it never comes back under the same key).
func (s *State) checkNewcomer(d keys.DeviceID) error {
	if s.revoked[d] {
		return fmt.Errorf("%w: %s", ErrRevoked, d)
	}
	if _, ok := s.members[d]; ok {
		return fmt.Errorf("%w: %s is already a member", ErrBadOp, d)
	}
	return nil
}

// unhidden reports the characters a name may not hold because they hide
// or rearrange what a person reads beside it (the words of a waiting
// join): controls, format characters (bidirectional overrides, zero-width
// joiners) and line and paragraph separators.
func unhidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// MaxNameLen bounds a device name, in bytes.
const MaxNameLen = 64

// CheckName checks a device name: 1 to MaxNameLen bytes of UTF-8, no
// control, format or separator characters (unhidden), no space at either
// end.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadName, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: not UTF-8", ErrBadName)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: %q starts or ends with a space", ErrBadName, name)
	case strings.IndexFunc(name, unhidden) >= 0:
		return fmt.Errorf("%w: %q has a control, format or line-separator character (which can hide or reorder what is shown)", ErrBadName, name)
	}
	return nil
}

// CheckWords checks a join's words as an add record carries them: exactly
// SASWords words of the recovery phrase's list, lower case, one space
// between them (what Invite.Words makes).
func CheckWords(words string) error {
	ws := strings.Split(words, " ")
	if len(ws) != SASWords {
		return fmt.Errorf("%w: %d words, want %d", ErrBadWords, len(ws), SASWords)
	}
	for _, w := range ws {
		if !keys.IsWord(w) {
			return fmt.Errorf("%w: %q is not a word of the list", ErrBadWords, w)
		}
	}
	return nil
}

// Next makes the record that follows the state's head, signed by signer.
// Only the operation fields of op are read (Op, Device, Role, Relay, Epoch,
// Upto, Keys, Name, Flags, Words). The record is format 1 unless it needs
// format 2 (a format-2 operation, a name or settings) or format 3 (words). The result still has to
// pass Apply.
func (s *State) Next(signer *keys.Identity, op Record, timeMs int64) Record {
	r := Record{
		Format: Format, Vault: s.Vault, Seq: s.Seq + 1, Prev: s.Head.Bytes(),
		Op: op.Op, Device: op.Device, Role: op.Role, Relay: op.Relay, Epoch: op.Epoch,
		Upto: op.Upto, Keys: op.Keys, Time: timeMs, Name: op.Name, Flags: op.Flags,
	}
	if r.Op >= OpRecover || r.Name != "" || r.Flags != 0 {
		r.Format = Format2
	}
	if op.Words != "" {
		r.Words, r.Format = op.Words, Format3
	}
	if len(r.Keys) == 0 {
		r.Keys = nil // the canonical "no keys"
	}
	r.Sign(signer)
	return r
}
