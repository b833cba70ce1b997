package relay

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// handleRecover answers /weft/recover/1 for a served vault with the same
// session a device runs (internal/netsync): a holder of the vault's
// recovery phrase gets the membership log and appends its recover record
// here, so a vault whose every device is lost comes back through its
// relay alone (docs/security.md, "Recovery").
func (r *Relay) handleRecover(s network.Stream) {
	defer s.Close()
	dev, err := DeviceIDOf(s.Conn().RemotePeer())
	if err != nil {
		r.refuseRead(s, s.Conn().RemotePeer(), fmt.Errorf("%w: %w", refusal.ErrNotDevice, err))
		return
	}
	c := r.inboundConn(s)
	if err := r.attempts.Allow(dev, r.now()); err != nil {
		c.SendError(wire.CodeRateLimited, "too many attempts; try again in a minute")
		r.refuse(s, refusal.RateLimited, dev, err)
		return
	}
	_ = s.SetDeadline(time.Now().Add(helloTimeout))
	h, err := c.ReadHello()
	if err != nil {
		r.refuseRead(s, dev, err)
		return
	}
	if err := c.AcceptHello(h.Vault); err != nil {
		return
	}
	var target netsync.RecoverTarget
	if rep := r.replica(h.Vault); rep != nil {
		target = recoverReplica{rep}
	}
	if err := netsync.ServeRecover(c, r.id.ID(), dev, target); err != nil {
		r.refuse(s, refusal.BadRecovery, dev, err)
		return
	}
	r.log.Info("device recovered a vault with its recovery phrase", "device", dev, "vault", h.Vault)
}

// recoverReplica is a replica's membership as /weft/recover/1 serves it.
type recoverReplica struct{ rep *replica }

func (t recoverReplica) Records() []member.Record { return t.rep.records() }

func (t recoverReplica) Append(rec member.Record) error {
	if rec.Seq != t.rep.memberSeq()+1 {
		return netsync.ErrMembershipMoved
	}
	return t.rep.addMember(rec)
}
