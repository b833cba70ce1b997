package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Revocation (`weft revoke DEVICE`, POST /v1/revoke; docs/security.md,
// "Revocation"). An admin device records a revocation record that
//
//   - removes the device from the membership, so every device and relay
//     refuses its streams once the record reaches them;
//   - keeps the revoked device's log up to the admin's head of it (upto):
//     its later entries are refused everywhere (member.ErrRevokedEntry);
//   - starts a new key epoch whose random secret is sealed to each remaining
//     member, so what is written afterwards is unreadable to the revoked
//     device. What it held before stays readable to it: nothing is
//     re-encrypted.

// Errors of Revoke besides ErrNotAdmin.
var (
	// ErrNoSuchDevice means no current member matches the device named.
	ErrNoSuchDevice = api.Classified(api.ErrNotFound, "no member of the vault matches")
	// ErrAmbiguousDevice means several members match a device prefix.
	ErrAmbiguousDevice = errors.New("several members match; give more of the device ID")
	// ErrRevokeSelf means a device was asked to revoke itself.
	ErrRevokeSelf = errors.New("a device cannot revoke itself")
)

// Revoke revokes a device of a vault (the only one when vault is empty);
// only an admin device may. See RevokeRequest for how both are named.
func (n *Node) Revoke(req api.RevokeRequest) (api.RevokeResult, error) {
	v, err := n.pickVaultByPrefix(req.Vault)
	if err != nil {
		return api.RevokeResult{}, err
	}
	d, err := v.matchMember(req.Device)
	if err != nil {
		return api.RevokeResult{}, err
	}
	epoch, upto, err := v.revoke(d)
	if err != nil {
		return api.RevokeResult{}, err
	}
	n.log.Info("device revoked", "peer", d, "folder", v.cfg.Folder, "epoch", epoch, "upto", upto)
	return api.RevokeResult{Folder: v.cfg.Folder, Vault: v.id.String(), Device: d.String(), Epoch: epoch, Upto: upto}, nil
}

// pickVaultByPrefix finds a vault by a prefix of its hex ID; empty picks
// the only vault.
func (n *Node) pickVaultByPrefix(prefix string) (*vault, error) {
	var match []*vault
	for _, v := range n.vaultsNow() {
		if strings.HasPrefix(v.id.String(), strings.ToLower(prefix)) {
			match = append(match, v)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0:
		return nil, fmt.Errorf("no vault %q on this device", prefix)
	default:
		return nil, errors.New("several vaults on this device; name one with --vault")
	}
}

// matchMember finds the current member that s names: its peer ID, or a
// unique prefix of it, with or without the common "12D3KooW".
func (v *vault) matchMember(s string) (keys.DeviceID, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return keys.DeviceID{}, fmt.Errorf("device %q: %w", s, ErrNoSuchDevice)
	}
	var match []keys.DeviceID
	for _, d := range v.memberList() {
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

// revoke records d's revocation, signed by this device, and returns the
// epoch it starts and the last entry of d it keeps (this device's head of
// d's log).
func (v *vault) revoke(d keys.DeviceID) (epoch uint32, upto uint64, err error) {
	if d == v.n.id.ID() {
		return 0, 0, ErrRevokeSelf
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if role, ok := v.members.Role(v.n.id.ID()); !ok || role != member.RoleAdmin {
		return 0, 0, ErrNotAdmin
	}
	upto = v.db.Head(d).Seq
	op, _, err := v.members.RevokeOp(rand.Reader, d, upto)
	if err != nil {
		return 0, 0, err
	}
	r := v.members.Next(v.n.id, op, v.n.now().UnixMilli())
	if err := v.db.AppendMember(r); err != nil {
		return 0, 0, fmt.Errorf("recording the revocation: %w", err)
	}
	if err := v.members.Apply(r); err != nil {
		return 0, 0, fmt.Errorf("applying the revocation: %w", err)
	}
	v.memberAppliedLocked(r)
	v.grewLocked()
	return r.Epoch, upto, nil
}
