package roster

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Errors of the membership changes a user asks for.
var (
	// ErrNotAdmin means a membership change was asked of a device that is
	// not an admin of the vault.
	ErrNotAdmin = api.Classified(api.ErrForbidden, "only an admin device of the vault can change its membership")
	// ErrNoSuchRelay means a relay to remove is not listed in the vault.
	ErrNoSuchRelay = errors.New("not a relay of this vault")
	// ErrNoSuchDevice means no current member matches the device named.
	ErrNoSuchDevice = api.Classified(api.ErrNotFound, "no member of the vault matches")
	// ErrAmbiguousDevice means several members match a device prefix.
	ErrAmbiguousDevice = errors.New("several members match; give more of the device ID")
	// ErrRevokeSelf means a device was asked to revoke itself.
	ErrRevokeSelf = errors.New("a device cannot revoke itself")
)

// Log is where membership records are kept durably (the vault's
// member/members.log, vaultdb.DB.AppendMember): a record counts only once
// it is stored.
type Log interface {
	AppendMember(member.Record) error
}

// Roster is one vault's membership on this device. It is safe for
// concurrent use.
type Roster struct {
	self    *keys.Identity
	secrets keys.VaultSecrets
	log     Log
	now     func() time.Time

	mu    sync.Mutex // guards state and fork
	state *member.State
	fork  *Fork // the first fork seen, nil while none
}

// Fork is a membership record a peer holds at a sequence number where this
// device holds another, both valid on the same history before them: two
// admins changed the membership at the same moment (docs/pairing.md, "Two
// admins at the same moment"). The held record stands here; devices that
// got the other first keep it, so they disagree about the membership.
type Fork struct {
	Seq   uint64
	Held  member.Record
	Other member.Record
}

// Fork returns the first membership fork this device has seen, or nil.
func (r *Roster) Fork() *Fork {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fork
}

// noteForkLocked checks raw, a record at seq that this device already
// holds a record at: another record on the same previous record, signed
// by a device that is an admin now, is a fork, remembered (the first
// one). Identical bytes, and anything else, are not: a member could
// otherwise sign a record nobody holds (its own rename at an old
// sequence number) and put every device in error. The checks are cheap
// (one decode, one signature) and run only on bytes that differ from the
// held record's, and only until a fork is seen. r.mu must be held.
func (r *Roster) noteForkLocked(seq uint64, raw []byte) {
	recs := r.state.Records()
	if r.fork != nil || seq <= 1 || seq > uint64(len(recs)) {
		return
	}
	held := recs[seq-1]
	if string(held.Encode()) == string(raw) {
		return
	}
	other, err := member.Decode(raw)
	if err != nil || other.Seq != seq || other.Vault != held.Vault || string(other.Prev) != string(held.Prev) {
		return
	}
	if role, ok := r.state.Role(other.Signer); !ok || role != member.RoleAdmin || !other.SignatureValid() {
		return
	}
	r.fork = &Fork{Seq: seq, Held: held, Other: other}
}

// New returns the roster of the vault whose membership state is folded
// from its stored records (vaultdb.DB.MemberState), for device self, which
// holds the vault's secrets. New records go to log; now stamps the
// records this device signs.
func New(self *keys.Identity, secrets keys.VaultSecrets, state *member.State, log Log, now func() time.Time) *Roster {
	return &Roster{self: self, secrets: secrets, log: log, now: now, state: state}
}

// IsMember reports whether d is a current member.
func (r *Roster) IsMember(d keys.DeviceID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.IsMember(d)
}

// IsRevoked reports whether d was revoked.
func (r *Roster) IsRevoked(d keys.DeviceID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.IsRevoked(d)
}

// Lost reports whether the membership does not name this device as either
// a member or a revoked one: a member that lost the record that admitted
// it (a damaged membership log), which must fetch it again.
func (r *Roster) Lost() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	self := r.self.ID()
	return !r.state.IsMember(self) && !r.state.IsRevoked(self)
}

// Role returns d's role, if d is a member.
func (r *Roster) Role(d keys.DeviceID) (member.Role, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Role(d)
}

// Records returns every membership record held, in order.
func (r *Roster) Records() []member.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.state.Records())
}

// Members lists the current members.
func (r *Roster) Members() []keys.DeviceID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Members()
}

// Relays lists the relay addresses the membership names.
func (r *Roster) Relays() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Relays()
}

// Seq is the sequence number of the last record held.
func (r *Roster) Seq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Seq
}

// CheckAuthor decides whether an entry of author with sequence seq may be
// accepted (member.State.CheckAuthor): a member's, or a revoked device's
// written before its revocation.
func (r *Roster) CheckAuthor(author keys.DeviceID, seq uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.CheckAuthor(author, seq)
}

// Accepted caps head, the stored head of author's log, at the last
// sequence number its revocation keeps, so a device neither offers nor
// counts entries every other device refuses (one that arrived here before
// the revocation did).
func (r *Roster) Accepted(author keys.DeviceID, head uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u, ok := r.state.Upto(author); ok {
		return min(head, u)
	}
	return head
}

// EpochSecrets returns the secrets of the key epochs sealed to this device
// (every one it could open, and an error naming those it could not).
func (r *Roster) EpochSecrets() (map[uint32]keys.EpochSecret, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.EpochSecrets(r.self, r.secrets.Epoch0())
}

// Ingest applies a membership record received from a peer and returns it,
// or nil when it was already held. A record at or below the held sequence
// is dropped before it is decoded: several streams deliver the same new
// record, and decoding (a CBOR decode, a canonical re-encode, and for a
// genesis a signature check) was a large share of CPU at 1,000 members.
// Dropping it loses nothing: the held record stands. Only bytes that
// differ from the held record's are decoded and checked, to notice a fork
// (noteForkLocked, Fork). An error from the log is returned as it is, so
// the caller can tell a full disk.
func (r *Roster) Ingest(raw []byte) (*member.Record, error) {
	if seq, ok := member.PeekSeq(raw); ok && seq <= r.Seq() {
		r.mu.Lock()
		r.noteForkLocked(seq, raw)
		r.mu.Unlock()
		return nil, nil
	}
	rec, err := member.Decode(raw)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.Seq <= r.state.Seq {
		// Held meanwhile (or a fork; the held record stands).
		r.noteForkLocked(rec.Seq, raw)
		return nil, nil
	}
	if err := r.storeLocked(rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// Rename records d's new name. A device renames itself; an admin renames
// any member (ErrNotAdmin otherwise).
func (r *Roster) Rename(d keys.DeviceID, name string) (member.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d != r.self.ID() {
		if err := r.adminLocked(); err != nil {
			return member.Record{}, err
		}
	}
	if !r.state.IsMember(d) {
		return member.Record{}, fmt.Errorf("device %s: %w", d.Short(), ErrNoSuchDevice)
	}
	if err := member.CheckName(name); err != nil {
		return member.Record{}, err
	}
	rec := r.state.Next(r.self, member.Record{Op: member.OpRename, Device: d, Name: name}, r.now().UnixMilli())
	if err := r.storeLocked(rec); err != nil {
		return member.Record{}, err
	}
	return rec, nil
}

// Change signs op as the next membership record, stores it and applies it.
// Only an admin may (ErrNotAdmin).
func (r *Roster) Change(op member.Record) (member.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.signLocked(op)
}

// Name returns d's name in the membership ("" when it has none).
func (r *Roster) Name(d keys.DeviceID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Name(d)
}

// Flags returns the vault's settings (member.Flag*).
func (r *Roster) Flags() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Flags()
}

// CanAdmit reports whether d may admit devices as members: an admin, or
// any member when the vault lets every member invite
// (member.FlagMembersInvite).
func (r *Roster) CanAdmit(d keys.DeviceID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.CanAdmit(d, member.RoleMember)
}

// Admit records d as a new member named name ("" for none), with every
// key epoch after 0 sealed to it and the words both devices showed for
// the join ("" for none; member.Invite.Words), so that every member can
// show them. Only a device that CanAdmit may (ErrNotAdmin).
func (r *Roster) Admit(d keys.DeviceID, name, words string) (member.Record, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.state.CanAdmit(r.self.ID(), member.RoleMember) {
		return member.Record{}, ErrNotAdmin
	}
	// A sealed secret that did not open matters only if the new device
	// needs that epoch, which AddOp reports.
	secrets, openErr := r.state.EpochSecrets(r.self, r.secrets.Epoch0())
	op, err := r.state.AddOp(rand.Reader, d, member.RoleMember, secrets)
	if err != nil {
		return member.Record{}, errors.Join(err, openErr)
	}
	if name != "" {
		if err := member.CheckName(name); err != nil {
			return member.Record{}, err
		}
	}
	if words != "" {
		if err := member.CheckWords(words); err != nil {
			return member.Record{}, err
		}
	}
	op.Name, op.Words = name, words
	rec := r.state.Next(r.self, op, r.now().UnixMilli())
	if err := r.storeLocked(rec); err != nil {
		return member.Record{}, err
	}
	return rec, nil
}

// Revoke records d's revocation: it keeps d's entries up to upto (this
// device's head of d's log) and starts a new key epoch sealed to every
// remaining member. Only an admin may, and not of itself.
func (r *Roster) Revoke(d keys.DeviceID, upto uint64) (member.Record, error) {
	if d == r.self.ID() {
		return member.Record{}, ErrRevokeSelf
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.adminLocked(); err != nil {
		return member.Record{}, err
	}
	op, _, err := r.state.RevokeOp(rand.Reader, d, upto)
	if err != nil {
		return member.Record{}, err
	}
	rec, err := r.signLocked(op)
	if err != nil {
		return member.Record{}, fmt.Errorf("recording the revocation: %w", err)
	}
	return rec, nil
}

// Match finds the current member that s names: its device ID, or a unique
// prefix of it, with or without the common "12D3KooW".
func (r *Roster) Match(s string) (keys.DeviceID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return keys.DeviceID{}, fmt.Errorf("device %q: %w", s, ErrNoSuchDevice)
	}
	var match []keys.DeviceID
	for _, d := range r.Members() {
		id := d.String()
		if id == s {
			return d, nil
		}
		if strings.HasPrefix(id, s) || strings.HasPrefix(strings.TrimPrefix(id, "12D3KooW"), s) {
			match = append(match, d)
		}
	}
	switch len(match) {
	case 0:
		return keys.DeviceID{}, fmt.Errorf("device %q: %w", s, ErrNoSuchDevice)
	case 1:
		return match[0], nil
	}
	return keys.DeviceID{}, fmt.Errorf("device %q: %w", s, ErrAmbiguousDevice)
}

func (r *Roster) adminLocked() error {
	if role, ok := r.state.Role(r.self.ID()); !ok || role != member.RoleAdmin {
		return ErrNotAdmin
	}
	return nil
}

// signLocked signs op as the next record, as an admin, and stores it.
func (r *Roster) signLocked(op member.Record) (member.Record, error) {
	if err := r.adminLocked(); err != nil {
		return member.Record{}, err
	}
	rec := r.state.Next(r.self, op, r.now().UnixMilli())
	if err := r.storeLocked(rec); err != nil {
		return member.Record{}, err
	}
	return rec, nil
}

// storeLocked stores rec durably, then applies it: a record counts only
// once it would survive a crash.
func (r *Roster) storeLocked(rec member.Record) error {
	if err := r.log.AppendMember(rec); err != nil {
		return err
	}
	if err := r.state.Apply(rec); err != nil {
		return fmt.Errorf("applying membership record %d: %w", rec.Seq, err)
	}
	return nil
}
