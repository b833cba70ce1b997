package members

import (
	"errors"
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// TestRolesNamesSettingsRevoke: an admin makes a member an admin and the
// last admin cannot step down; a device renames itself; a setting changes
// once (again is no new record); a revocation keeps the revoked device's
// log up to this device's head of it and is refused for this device
// itself; every change is applied after it is stored.
func TestRolesNamesSettingsRevoke(t *testing.T) {
	s, a, v := newService(t)
	m := newIdentity(t)
	r, err := v.roster.Admit(m.ID(), "tablet", "")
	if err != nil {
		t.Fatal(err)
	}
	v.Applied(r)

	self := a.self.ID().String()
	if _, err := s.SetRole(api.RoleRequest{Device: self, Admin: false}); err == nil || !strings.Contains(err.Error(), "last admin") {
		t.Errorf("the last admin stepping down: %v", err)
	}
	d, err := s.SetRole(api.RoleRequest{Device: m.ID().String()[:16], Admin: true})
	if err != nil || d.Role != member.RoleAdmin.String() || d.ID != m.ID().String() || d.Self {
		t.Fatalf("making a member an admin: %+v, %v", d, err)
	}
	if _, err := s.SetRole(api.RoleRequest{Device: m.ID().String(), Admin: true}); err == nil {
		t.Error("making an admin an admin again changed something")
	}

	if d, err := s.Rename(api.RenameRequest{Name: "desk"}); err != nil || !d.Self || v.roster.Name(a.self.ID()) != "desk" {
		t.Errorf("renaming itself: %+v, %v", d, err)
	}

	on := true
	applied := len(v.applied)
	st, err := s.ChangeSettings(api.SettingsRequest{MembersInvite: &on})
	if err != nil || !st.MembersInvite || st.Vault != v.id.String() {
		t.Fatalf("settings: %+v, %v", st, err)
	}
	if _, err := s.ChangeSettings(api.SettingsRequest{MembersInvite: &on}); err != nil || len(v.applied) != applied+1 {
		t.Errorf("the same setting again: %v, %d records applied (want one)", err, len(v.applied)-applied)
	}
	if all := s.Settings(); len(all) != 1 || !all[0].MembersInvite {
		t.Errorf("Settings: %+v", all)
	}

	if _, err := s.SetRole(api.RoleRequest{Device: self, Admin: false}); err != nil {
		t.Errorf("stepping down beside another admin: %v", err)
	}
	// This device stepped down, so it may revoke no one now; the other
	// admin's service may.
	if _, err := s.Revoke(api.RevokeRequest{Device: m.ID().String()}); !errors.Is(err, roster.ErrNotAdmin) {
		t.Errorf("a member revoking: %v, want ErrNotAdmin", err)
	}
}

// TestRevokeKeepsHead: a revocation keeps the revoked device's log up to
// this device's head of it, starts a new epoch, and is refused for this
// device itself and for a prefix several members share.
func TestRevokeKeepsHead(t *testing.T) {
	s, _, v := newService(t)
	var ids []*keys.Identity
	for range 2 {
		m := newIdentity(t)
		r, err := v.roster.Admit(m.ID(), "", "")
		if err != nil {
			t.Fatal(err)
		}
		v.Applied(r)
		ids = append(ids, m)
	}
	v.heads[ids[0].ID()] = 41
	if _, err := s.Revoke(api.RevokeRequest{Device: s.agent.Self().String()}); !errors.Is(err, ErrRevokeSelf) {
		t.Errorf("revoking itself: %v", err)
	}
	if _, err := s.Revoke(api.RevokeRequest{Device: "12D3KooW"}); !errors.Is(err, ErrAmbiguousDevice) {
		t.Errorf("an ambiguous prefix: %v", err)
	}
	res, err := s.Revoke(api.RevokeRequest{Vault: v.id.String()[:8], Device: ids[0].ID().String()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Upto != 41 || res.Epoch != 1 || res.Device != ids[0].ID().String() || res.Folder != v.folder {
		t.Errorf("revocation %+v, want upto 41 in epoch 1", res)
	}
	if v.roster.IsMember(ids[0].ID()) || !v.roster.IsRevoked(ids[0].ID()) {
		t.Error("the revoked device is still a member")
	}
	if last := v.applied[len(v.applied)-1]; last.Op != member.OpRevoke || last.Upto != 41 {
		t.Errorf("last record applied: %+v", last)
	}
	if _, err := s.Revoke(api.RevokeRequest{Device: ids[0].ID().String()}); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("revoking twice: %v", err)
	}
	if _, err := s.PickVault("ffff"); err == nil {
		t.Error("a vault prefix that names none was taken")
	}
}
