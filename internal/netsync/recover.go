package netsync

import (
	"errors"
	"fmt"
	"io"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// The recovery protocol (/weft/recover/1, protocol/wire/msg_recover.go):
// a device that holds a vault's recovery phrase and nothing else gets the
// membership log from a member device or a relay and appends its recover
// record there, from where every device and relay of the vault learns it
// as any record. Device and relay answer with ServeRecover.

// RecoverTarget is a vault's membership as the answerer keeps it.
type RecoverTarget interface {
	// Records is the membership log: records[i].Seq == i+1.
	Records() []member.Record
	// Append stores rec, which must extend the log (member.State.Apply's
	// rules), and applies it; ErrMembershipMoved when the log grew past
	// what rec chains onto.
	Append(rec member.Record) error
}

// ErrMembershipMoved is Append's error when another record took the
// sequence number a recover record was made for: the recovering device
// asks again.
var ErrMembershipMoved = errors.New("the vault's membership changed meanwhile; try again")

// ServeRecover answers one recovery stream after the Hello: self is the
// answerer, opener the device asking, t the vault named in the Hello (nil
// when it is not served here: answered as a failed proof). It checks the opener's proof
// against the vault's genesis before it sends anything, and accepts only
// a recover record that admits the opener. It returns why the session
// failed, after telling the opener.
func ServeRecover(c *wire.Conn, self, opener keys.DeviceID, t RecoverTarget) error {
	p, err := c.ExpectLimit(wire.MsgRecoverProof, wire.MaxRecoverProofFrame)
	if err != nil {
		return err
	}
	req, err := wire.ParseRecoverProof(p)
	if err != nil {
		c.SendError(wire.CodeProtocol, err.Error())
		return err
	}
	var recs []member.Record
	if t != nil {
		recs = t.Records()
	}
	if len(recs) == 0 {
		// A vault not served here is answered as a proof that fails: an
		// outsider learns nothing of which vaults are served.
		c.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		return errors.New("recovery: vault not served here")
	}
	if err := member.CheckRecoveryProof(recs[0], opener, self, req.Proof); err != nil {
		if errors.Is(err, member.ErrNotRecoverable) {
			c.SendError(wire.CodeNotRecoverable, err.Error())
		} else {
			c.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		}
		return err
	}
	if err := sendMemberLog(c, recs); err != nil {
		return err
	}
	p, err = c.ExpectLimit(wire.MsgMember, wire.MaxMemberRecord+8)
	if errors.Is(err, io.EOF) {
		return nil // the opener was admitted already (a retry): the log was all it needed
	}
	if err != nil {
		return err
	}
	rec, err := member.Decode(p)
	if err != nil {
		c.SendError(wire.CodeProtocol, err.Error())
		return err
	}
	if rec.Op != member.OpRecover || rec.Device != opener {
		err := fmt.Errorf("recovery: a %s record for %s, want a recover record admitting the opener", rec.Op, rec.Device.Short())
		c.SendError(wire.CodeProtocol, err.Error())
		return err
	}
	if err := t.Append(rec); err != nil {
		code := wire.CodeProtocol
		if errors.Is(err, ErrMembershipMoved) {
			code = wire.CodeInternal
		}
		c.SendError(code, err.Error())
		return err
	}
	return sendMemberLog(c, t.Records())
}

func sendMemberLog(c *wire.Conn, recs []member.Record) error {
	m := wire.MemberLog{Records: make([][]byte, len(recs))}
	for i, r := range recs {
		m.Records[i] = r.Encode()
	}
	if err := c.Send(wire.MsgMemberLog, m); err != nil {
		return err
	}
	return c.Flush()
}

// RequestRecover runs the recovering device's side after the Hello (the
// caller closes the stream when it returns): id is
// the new device, answerer the device or relay asked, root the vault's
// root secret (from the recovery phrase), name the new device's name (""
// for none). It returns the membership log with its recover record last,
// every record checked (chain, signatures, the vault proof), and the log
// admitting id as an admin.
func RequestRecover(c *wire.Conn, rand io.Reader, id *keys.Identity, answerer keys.DeviceID, root keys.RootSecret, name string, nowMs int64) ([]member.Record, error) {
	vk := root.VaultKey()
	if err := c.Send(wire.MsgRecoverProof, wire.RecoverProof{Proof: member.RecoveryProof(vk, id.ID(), answerer)}); err != nil {
		return nil, err
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	state, held, err := readMemberLog(c, vk.Public().ID())
	if err != nil {
		return nil, err
	}
	if role, ok := state.Role(id.ID()); ok && role == member.RoleAdmin {
		// A retry after a recovery whose answer was lost: the answerer
		// holds this device's recover record already.
		return held, nil
	}
	rec, err := state.Recover(rand, id, root, name, nowMs)
	if err != nil {
		return nil, err
	}
	if err := c.SendRaw(wire.MsgMember, rec.Encode()); err != nil {
		return nil, err
	}
	if err := c.Flush(); err != nil {
		return nil, err
	}
	after, recs, err := readMemberLog(c, vk.Public().ID())
	if err != nil {
		return nil, err
	}
	if role, ok := after.Role(id.ID()); !ok || role != member.RoleAdmin {
		return nil, errors.New("recovery: the answer's membership does not admit this device")
	}
	return recs, nil
}

// readMemberLog reads a MemberLog and folds it into the state of vault,
// checking every record.
func readMemberLog(c *wire.Conn, vault keys.VaultID) (*member.State, []member.Record, error) {
	p, err := c.Expect(wire.MsgMemberLog)
	if err != nil {
		var we wire.Error
		if errors.As(err, &we) {
			return nil, nil, fmt.Errorf("the peer refused: %s", we.Reason)
		}
		return nil, nil, err
	}
	m, err := wire.ParseMemberLog(p)
	if err != nil {
		return nil, nil, err
	}
	state := member.NewState(vault)
	recs := make([]member.Record, 0, len(m.Records))
	for i, raw := range m.Records {
		r, err := member.Decode(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		if err := state.Apply(r); err != nil {
			return nil, nil, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		recs = append(recs, r)
	}
	return state, recs, nil
}
