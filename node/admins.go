package node

import (
	"errors"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/member"
)

// Several admins and the vault's settings (`weft admin`, `weft settings`;
// docs/pairing.md). An admin makes another member an admin, or an admin a
// member again, with a set-role record; the vault's last admin cannot step
// down (member.ErrLastAdmin). The settings are one record too. Every device
// and relay checks these records as any other (protocol/member).

// SetRole makes the device req names an admin of its vault, or a member
// again. Only an admin may.
func (n *Node) SetRole(req api.RoleRequest) (api.Device, error) {
	v, err := n.pickVaultByPrefix(req.Vault)
	if err != nil {
		return api.Device{}, err
	}
	d, err := v.roster.Match(req.Device)
	if err != nil {
		return api.Device{}, err
	}
	role := member.RoleMember
	if req.Admin {
		role = member.RoleAdmin
	}
	if cur, _ := v.roster.Role(d); cur == role {
		return api.Device{}, errors.New("the device is already " + role.String() + "; nothing changed")
	}
	r, err := v.roster.Change(member.Record{Op: member.OpSetRole, Device: d, Role: role})
	if errors.Is(err, member.ErrLastAdmin) {
		return api.Device{}, errors.New("this is the vault's last admin: make another device an admin first (`weft admin add DEVICE`)")
	}
	if err != nil {
		return api.Device{}, err
	}
	v.memberApplied(r)
	n.log.Info("device role changed", "peer", d, "folder", v.cfg.Folder, "role", role)
	return api.Device{Folder: v.cfg.Folder, ID: d.String(), Role: role.String(), Self: d == n.id.ID()}, nil
}

// Rename records a new name for the device req names (this device when
// Device is empty): a device renames itself, an admin any member.
func (n *Node) Rename(req api.RenameRequest) (api.Device, error) {
	v, err := n.pickVaultByPrefix(req.Vault)
	if err != nil {
		return api.Device{}, err
	}
	d := n.id.ID()
	if req.Device != "" {
		if d, err = v.roster.Match(req.Device); err != nil {
			return api.Device{}, err
		}
	}
	r, err := v.roster.Rename(d, req.Name)
	if err != nil {
		return api.Device{}, err
	}
	v.memberApplied(r)
	role, _ := v.roster.Role(d)
	n.log.Info("device renamed", "peer", d, "name", req.Name, "folder", v.cfg.Folder)
	return api.Device{Folder: v.cfg.Folder, ID: d.String(), Name: req.Name, Role: role.String(), Self: d == n.id.ID()}, nil
}

// Settings returns each vault's settings.
func (n *Node) Settings() []api.VaultSettings {
	out := []api.VaultSettings{}
	for _, v := range n.vaultsNow() {
		out = append(out, settingsOf(v))
	}
	return out
}

func settingsOf(v *vault) api.VaultSettings {
	f := v.roster.Flags()
	return api.VaultSettings{
		Folder: v.cfg.Folder, Vault: v.id.String(),
		Recoverable:   f&member.FlagRecoverable != 0,
		MembersInvite: f&member.FlagMembersInvite != 0,
	}
}

// ChangeSettings changes a vault's settings; a setting left nil keeps its
// value. Only an admin may.
func (n *Node) ChangeSettings(req api.SettingsRequest) (api.VaultSettings, error) {
	v, err := n.pickVaultByPrefix(req.Vault)
	if err != nil {
		return api.VaultSettings{}, err
	}
	f := v.roster.Flags()
	if req.MembersInvite != nil {
		f &^= member.FlagMembersInvite
		if *req.MembersInvite {
			f |= member.FlagMembersInvite
		}
	}
	if f == v.roster.Flags() {
		return settingsOf(v), nil
	}
	r, err := v.roster.Change(member.Record{Op: member.OpSettings, Flags: f})
	if err != nil {
		return api.VaultSettings{}, err
	}
	v.memberApplied(r)
	n.log.Info("vault settings changed", "folder", v.cfg.Folder, "flags", f)
	return settingsOf(v), nil
}
