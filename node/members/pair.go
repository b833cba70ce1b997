package members

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Stream is the stream under a pairing session. members sets its
// deadlines (the network's clock, never Agent.Now, which tests may skew)
// and, while a join waits for approval, reads it to learn that the joiner
// gave up.
type Stream interface {
	io.Reader
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
}

// Refusal is why members refused a stream's peer, after telling it (or
// not, when it could not be told). The agent counts and logs it: Read
// means it came from reading the peer's first message, so the stream is
// out of step and is reset, and the agent classifies Err itself;
// otherwise Reason is one of internal/refusal's reasons.
type Refusal struct {
	Reason string
	Read   bool
	Err    error
}

func (r *Refusal) Error() string {
	if r.Read {
		return "reading the first message: " + r.Err.Error()
	}
	return r.Reason + ": " + r.Err.Error()
}

func (r *Refusal) Unwrap() error { return r.Err }

// Joined is a device admitted through an invite code.
type Joined struct {
	Vault  Vault
	Device keys.DeviceID
	Name   string
	// Words are the join's short authentication string
	// (member.Invite.Words), which the joining device shows too: before
	// approval for a code made with confirmation, once joined otherwise.
	Words string
}

// AnswerPair answers a pairing session on f, opened by dev over st: it
// reads the joiner's request (at most wire.MaxPairRequestFrame bytes),
// takes the invite code it proves, waits for a person's approval when the
// code asks for one, admits dev to the code's vault, and sends the vault's
// secrets wrapped under the code with the membership records. A peer
// refused is told why and returned as a *Refusal; any other error means
// the join did not happen and has been told to the joiner where it could
// be. Once the code is taken (and the join approved) f counts its traffic
// as dev's.
func (s *Service) AnswerPair(ctx context.Context, st Stream, f *wire.Conn, dev keys.DeviceID) (Joined, error) {
	p, err := f.ExpectLimit(wire.MsgPairRequest, wire.MaxPairRequestFrame)
	if err != nil {
		return Joined{}, &Refusal{Read: true, Err: err}
	}
	req, err := wire.ParsePairRequest(p)
	if err == nil && req.Name != "" {
		err = member.CheckName(req.Name)
	}
	if err != nil {
		f.SendError(wire.CodeProtocol, err.Error())
		return Joined{}, &Refusal{Reason: refusal.Malformed, Err: err}
	}
	taken, err := s.invites.Take(dev, req.Name, req.Proof, s.agent.Now())
	if err != nil {
		f.SendError(wire.CodeInviteInvalid, err.Error())
		return Joined{}, &Refusal{Reason: refusal.BadInvite, Err: err}
	}
	// The words both devices can show for this join, with or without
	// approval: the joiner prints them too (`weft join`).
	joined := Joined{Device: dev, Name: req.Name, Words: taken.Invite.Words(dev)}
	if j := taken.Join; j != nil {
		if err := s.awaitApproval(ctx, st, f, j); err != nil {
			return Joined{}, err
		}
	}
	_ = st.SetDeadline(time.Now().Add(time.Minute))
	f.SetCounter(s.agent.Counter(dev))
	v := s.agent.Vault(taken.Vault)
	if v == nil {
		s.log.Warn("refusing a join: the invite's vault was removed from this device", "peer", dev, "vault", taken.Vault)
		f.SendError(wire.CodeInviteInvalid, "the vault of this invite code is no longer on the inviting device")
		return Joined{}, errors.New("the invite's vault was removed from this device")
	}
	joined.Vault = v
	r, err := v.Roster().Admit(dev, req.Name, joined.Words) // seals the epoch secrets after 0 to dev
	if err != nil {
		s.log.Error("admitting device", "peer", dev, "err", err)
		f.SendError(wire.CodeInternal, "the inviter could not record the new member")
		return Joined{}, fmt.Errorf("admitting %s: %w", dev, err)
	}
	v.Applied(r)
	wrapped, err := taken.Invite.Wrap(rand.Reader, dev, v.Secrets())
	if err != nil {
		f.SendError(wire.CodeInternal, "wrapping keys")
		return Joined{}, fmt.Errorf("wrapping the vault's secrets: %w", err)
	}
	var records [][]byte
	for _, r := range v.Roster().Records() {
		records = append(records, r.Encode())
	}
	if err := f.Send(wire.MsgPairAccept, wire.PairAccept{WrappedKeys: wrapped, Records: records}); err != nil {
		return Joined{}, err
	}
	if err := f.Flush(); err != nil {
		return Joined{}, err
	}
	s.log.Info("device joined", "peer", dev, "name", req.Name, "folder", v.Folder(), "words", joined.Words)
	s.agent.Publish(api.Event{Type: api.EventPeerJoined, Peer: dev.String(), Name: req.Name, Folder: v.Folder(), Words: joined.Words})
	return joined, nil
}

// isTimeout reports whether err is a read deadline passing (net.Pipe and
// quic say os.ErrDeadlineExceeded; yamux streams a Timeout error).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}

// awaitApproval holds a join of a confirm code until a person decides it
// (DecideJoin) or member.ConfirmWait passes, tells the joiner it waits
// (PairPending) and announces it (event join-pending). A join not approved
// returns an error after the joiner was told why. A joiner that gives up
// (closes the stream) withdraws its join.
func (s *Service) awaitApproval(ctx context.Context, st Stream, f *wire.Conn, j *roster.Join) error {
	_ = st.SetDeadline(time.Now().Add(member.ConfirmWait + time.Minute))
	if err := f.SendRaw(wire.MsgPairPending, nil); err != nil {
		return err
	}
	if err := f.Flush(); err != nil {
		return err
	}
	folder := ""
	if v := s.agent.Vault(j.Vault); v != nil {
		folder = v.Folder()
	}
	s.log.Info("a device asks to join; approve it with `weft devices approve` if it shows these words", "peer", j.Joiner, "name", j.Name, "folder", folder, "words", j.Words)
	s.agent.Publish(api.Event{Type: api.EventJoinPending, Peer: j.Joiner.String(), Name: j.Name, Folder: folder, Words: j.Words})
	ctx, cancel := context.WithTimeout(ctx, member.ConfirmWait)
	defer cancel()
	// The joiner sends nothing while it waits: a read that returns means
	// it gave up. The reader is ended (a read deadline now) and waited
	// for before the session goes on.
	gone := make(chan struct{})
	var left bool // the joiner closed the stream or sent something: it gave up
	go func() {
		defer close(gone)
		_, err := st.Read(make([]byte, 1))
		left = !isTimeout(err)
		cancel()
	}()
	err := s.invites.Wait(ctx, j)
	_ = st.SetReadDeadline(time.Now())
	<-gone
	if err == nil && left {
		// Approved as the joiner left: it would never get the keys, and
		// the roster would hold a member that is not there.
		err = errors.New("the joining device gave up waiting")
	}
	if err != nil {
		f.SendError(wire.CodeJoinDenied, err.Error())
		_ = f.Flush()
		s.log.Info("join not approved", "peer", j.Joiner, "folder", folder, "why", err)
		return fmt.Errorf("join not approved: %w", err)
	}
	return nil
}
