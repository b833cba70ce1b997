package members

import (
	"errors"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/member"
)

// Several admins, names and the vault's settings (`weft admin`, `weft
// rename`, `weft settings`; docs/pairing.md), and revocation (`weft
// revoke`; docs/security.md, "Revocation"). Each change is one record,
// signed by this device and stored before it counts (node/roster); every
// device and relay checks it as any other (protocol/member). The vault's
// last admin cannot step down (member.ErrLastAdmin).
//
// A revocation record removes the device from the membership, so every
// device and relay refuses its streams once the record reaches them; keeps
// the revoked device's log up to this device's head of it (upto), its
// later entries refused everywhere (member.ErrRevokedEntry); and starts a
// new key epoch whose secret is sealed to each remaining member, so what
// is written afterwards is unreadable to the revoked device. What it held
// before stays readable to it: nothing is re-encrypted.

// SetRole makes the device req names an admin of its vault, or a member
// again. Only an admin may.
func (s *Service) SetRole(req api.RoleRequest) (api.Device, error) {
	v, err := s.PickVault(req.Vault)
	if err != nil {
		return api.Device{}, err
	}
	d, err := v.Roster().Match(req.Device)
	if err != nil {
		return api.Device{}, err
	}
	role := member.RoleMember
	if req.Admin {
		role = member.RoleAdmin
	}
	if cur, _ := v.Roster().Role(d); cur == role {
		return api.Device{}, errors.New("the device is already " + role.String() + "; nothing changed")
	}
	r, err := v.Roster().Change(member.Record{Op: member.OpSetRole, Device: d, Role: role})
	if errors.Is(err, member.ErrLastAdmin) {
		return api.Device{}, errors.New("this is the vault's last admin: make another device an admin first (`weft admin add DEVICE`)")
	}
	if err != nil {
		return api.Device{}, err
	}
	v.Applied(r)
	s.log.Info("device role changed", "peer", d, "folder", v.Folder(), "role", role)
	return api.Device{Folder: v.Folder(), ID: d.String(), Role: role.String(), Self: d == s.agent.Self()}, nil
}

// Rename records a new name for the device req names (this device when
// Device is empty): a device renames itself, an admin any member.
func (s *Service) Rename(req api.RenameRequest) (api.Device, error) {
	v, err := s.PickVault(req.Vault)
	if err != nil {
		return api.Device{}, err
	}
	d := s.agent.Self()
	if req.Device != "" {
		if d, err = v.Roster().Match(req.Device); err != nil {
			return api.Device{}, err
		}
	}
	r, err := v.Roster().Rename(d, req.Name)
	if err != nil {
		return api.Device{}, err
	}
	v.Applied(r)
	role, _ := v.Roster().Role(d)
	s.log.Info("device renamed", "peer", d, "name", req.Name, "folder", v.Folder())
	return api.Device{Folder: v.Folder(), ID: d.String(), Name: req.Name, Role: role.String(), Self: d == s.agent.Self()}, nil
}

// Settings returns each vault's settings.
func (s *Service) Settings() []api.VaultSettings {
	out := []api.VaultSettings{}
	for _, v := range s.agent.Vaults() {
		out = append(out, settingsOf(v))
	}
	return out
}

func settingsOf(v Vault) api.VaultSettings {
	f := v.Roster().Flags()
	return api.VaultSettings{
		Folder: v.Folder(), Vault: v.ID().String(),
		Recoverable:   f&member.FlagRecoverable != 0,
		MembersInvite: f&member.FlagMembersInvite != 0,
	}
}

// ChangeSettings changes a vault's settings; a setting left nil keeps its
// value. Only an admin may.
func (s *Service) ChangeSettings(req api.SettingsRequest) (api.VaultSettings, error) {
	v, err := s.PickVault(req.Vault)
	if err != nil {
		return api.VaultSettings{}, err
	}
	f := v.Roster().Flags()
	if req.MembersInvite != nil {
		f &^= member.FlagMembersInvite
		if *req.MembersInvite {
			f |= member.FlagMembersInvite
		}
	}
	if f == v.Roster().Flags() {
		return settingsOf(v), nil
	}
	r, err := v.Roster().Change(member.Record{Op: member.OpSettings, Flags: f})
	if err != nil {
		return api.VaultSettings{}, err
	}
	v.Applied(r)
	s.log.Info("vault settings changed", "folder", v.Folder(), "flags", f)
	return settingsOf(v), nil
}

// Revoke revokes a device of a vault (the only one when req names none);
// only an admin device may. See api.RevokeRequest for how both are named.
// The revocation keeps the device's log up to this device's head of it.
func (s *Service) Revoke(req api.RevokeRequest) (api.RevokeResult, error) {
	v, err := s.PickVault(req.Vault)
	if err != nil {
		return api.RevokeResult{}, err
	}
	d, err := v.Roster().Match(req.Device)
	if err != nil {
		return api.RevokeResult{}, err
	}
	upto := v.LogHead(d)
	r, err := v.Roster().Revoke(d, upto)
	if err != nil {
		return api.RevokeResult{}, err
	}
	v.Applied(r)
	s.log.Info("device revoked", "peer", d, "folder", v.Folder(), "epoch", r.Epoch, "upto", upto)
	return api.RevokeResult{Folder: v.Folder(), Vault: v.ID().String(), Device: d.String(), Epoch: r.Epoch, Upto: upto}, nil
}
