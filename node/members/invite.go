package members

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Invite codes. `weft invite` asks the running agent for a one-time code;
// the joining device dials the inviter at the addresses in the code,
// proves it holds the code's secret, and receives the vault's secrets
// wrapped under a key derived from the code, with the membership records,
// the last of which (signed by the inviter, an admin) admits it (pair.go).
// A code works once, until it expires, and only on the agent that made it
// (codes live in memory). A code made with confirmation (`weft invite
// --confirm`) holds each join until a person approves it, showing on both
// devices the words the code and the joiner give (member.Invite.Words).

// DefaultInviteTTL is how long an invite code is valid.
const DefaultInviteTTL = time.Hour

// Invite issues a one-time code for vault vaultID (the first vault when it
// is the zero value), valid for ttl (0: DefaultInviteTTL); with confirm,
// each join by it waits for approval (DecideJoin). Only the vault's
// admins, or every member when the vault's settings allow it, may invite.
func (s *Service) Invite(vaultID keys.VaultID, ttl time.Duration, confirm bool) (member.Invite, error) {
	v := s.agent.Vault(vaultID)
	if v == nil && vaultID == (keys.VaultID{}) {
		if all := s.agent.Vaults(); len(all) > 0 {
			v = all[0]
		}
	}
	if v == nil {
		return member.Invite{}, fmt.Errorf("no vault %s on this device", vaultID)
	}
	self := s.agent.Self()
	if !v.Roster().CanAdmit(self) {
		return member.Invite{}, errors.New("only the vault's admins can invite (`weft devices` lists them)")
	}
	if ttl <= 0 {
		ttl = DefaultInviteTTL
	}
	inv, err := member.NewInvite(rand.Reader, self, s.agent.Addrs(), s.agent.Now().Add(ttl).Unix())
	if err != nil {
		return member.Invite{}, err
	}
	s.invites.Add(inv, v.ID(), confirm)
	return inv, nil
}

// WaitingJoins lists the joins waiting for approval, oldest first.
func (s *Service) WaitingJoins() []api.WaitingJoin {
	var out []api.WaitingJoin
	for _, j := range s.invites.Waiting() {
		w := api.WaitingJoin{Device: j.Joiner.String(), Name: j.Name, Words: j.Words, Since: j.Since.UTC()}
		if v := s.agent.Vault(j.Vault); v != nil {
			w.Folder = v.Folder()
		}
		out = append(out, w)
	}
	return out
}

// DecideJoin approves or denies the waiting join of the device whose
// peer ID is, or starts with, prefix.
func (s *Service) DecideJoin(prefix string, approve bool) (api.WaitingJoin, error) {
	var match []api.WaitingJoin
	for _, w := range s.WaitingJoins() {
		if strings.HasPrefix(w.Device, prefix) && prefix != "" {
			match = append(match, w)
		}
	}
	switch len(match) {
	case 0:
		return api.WaitingJoin{}, fmt.Errorf("no join of a device %q waits for approval (`weft devices pending` lists them)", prefix)
	case 1:
	default:
		return api.WaitingJoin{}, fmt.Errorf("%d waiting joins match %q; give more of the device ID", len(match), prefix)
	}
	d, err := keys.ParseDeviceID(match[0].Device)
	if err != nil {
		return api.WaitingJoin{}, err
	}
	return match[0], s.invites.Decide(d, approve)
}
