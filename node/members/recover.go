package members

import (
	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Recovery (docs/security.md, "Recovery"): a device that holds only a
// vault's recovery phrase asks a member device or a relay for the
// membership log over /weft/recover/1 (internal/netsync) and appends a
// recover record that admits it as an admin; every other device and relay
// learns that record as any other, and the new device then syncs as a
// member. A device answers for the vaults it holds.

// AnswerRecover answers a recovery session on f, opened by dev: the Hello
// names the vault, and a vault not held here is answered as a failed
// proof (an outsider learns nothing of which vaults are served). It
// returns the vault dev recovered, or a *Refusal after telling dev why.
func (s *Service) AnswerRecover(f *wire.Conn, dev keys.DeviceID) (Vault, error) {
	h, err := f.ReadHello()
	if err != nil {
		return nil, &Refusal{Read: true, Err: err}
	}
	if err := f.AcceptHello(h.Vault); err != nil {
		return nil, err
	}
	var target netsync.RecoverTarget
	v := s.agent.Vault(h.Vault)
	if v != nil {
		target = recoverTarget{v}
	}
	if err := netsync.ServeRecover(f, s.agent.Self(), dev, target); err != nil {
		return nil, &Refusal{Reason: refusal.BadRecovery, Err: err}
	}
	name := v.Roster().Name(dev)
	s.log.Info("device recovered the vault with its recovery phrase", "peer", dev, "name", name, "folder", v.Folder())
	s.agent.Publish(api.Event{Type: api.EventPeerJoined, Peer: dev.String(), Name: name, Folder: v.Folder()})
	return v, nil
}

// recoverTarget is a vault's membership as /weft/recover/1 serves it.
type recoverTarget struct{ v Vault }

func (t recoverTarget) Records() []member.Record { return t.v.Roster().Records() }

func (t recoverTarget) Append(rec member.Record) error {
	if rec.Seq != t.v.Roster().Seq()+1 {
		return netsync.ErrMembershipMoved
	}
	return t.v.Ingest(rec.Encode())
}
