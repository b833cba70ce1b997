package node

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
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

// Errors of Revoke besides ErrNotAdmin (node/roster's).
var (
	// ErrNoSuchDevice means no current member matches the device named.
	ErrNoSuchDevice = roster.ErrNoSuchDevice
	// ErrAmbiguousDevice means several members match a device prefix.
	ErrAmbiguousDevice = roster.ErrAmbiguousDevice
	// ErrRevokeSelf means a device was asked to revoke itself.
	ErrRevokeSelf = roster.ErrRevokeSelf
)

// Revoke revokes a device of a vault (the only one when vault is empty);
// only an admin device may. See RevokeRequest for how both are named.
func (n *Node) Revoke(req api.RevokeRequest) (api.RevokeResult, error) {
	v, err := n.pickVaultByPrefix(req.Vault)
	if err != nil {
		return api.RevokeResult{}, err
	}
	d, err := v.roster.Match(req.Device)
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

// revoke records d's revocation, signed by this device, and returns the
// epoch it starts and the last entry of d it keeps (this device's head of
// d's log).
func (v *vault) revoke(d keys.DeviceID) (epoch uint32, upto uint64, err error) {
	upto = v.db.Head(d).Seq
	r, err := v.roster.Revoke(d, upto)
	if err != nil {
		return 0, 0, err
	}
	v.memberApplied(r)
	return r.Epoch, upto, nil
}
