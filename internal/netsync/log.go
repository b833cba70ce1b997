package netsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// The log protocol (/weft/log/1), answerer's side, after the Hello and
// the opener's LogRequest: the answerer sends the membership records after
// the opener's MemberSeq, then every entry the opener lacks, then a
// LogStatus with what it holds in full; afterwards it keeps the stream
// open and, at each growth of its log, sends what is new and a LogStatus
// of what changed. There is no polling: growth wakes the loop.

// LogSource is the log a LogServer serves, as the answerer's own kind of
// node keeps it. Its methods are called from the serving goroutine.
type LogSource interface {
	// Grown returns a channel closed at the next growth of the log or the
	// membership.
	Grown() <-chan struct{}
	// Records is the membership log: records[i].Seq == i+1.
	Records() []member.Record
	// Offered is what the source offers, by author: a device cuts a
	// revoked author's log at its revocation.
	Offered() protocol.Vector
	// Range calls fn for each stored entry of author from from to to.
	Range(author keys.DeviceID, from, to uint64, fn func(*entry.Entry) error) error
	// Held is what the source holds in full, by author: the LogStatus.
	// A device holds an entry once it holds its files' content too; a
	// relay once it holds every chunk the entry names.
	Held() protocol.Vector
}

// LogServer answers one log stream from a LogSource; the fields say how
// the kind of node running it differs.
type LogServer struct {
	Source LogSource
	// Round, if set, runs at the start of each round, before the
	// membership and the entries: the frames of the node's own kind (a
	// relay's peers, holds and quota), and what else it learns of the
	// opener. theirs is what the opener is known to hold; Round may raise
	// it.
	Round func(c *wire.Conn, theirs protocol.Vector) error
	// Opener is the device at the other end, and FromOpener, if set, the
	// highest entry of the opener's own log that it sent this node itself
	// (on its own pull). What it sent after this stream's request it
	// holds, so it is not pushed back down the stream however the push
	// and the opener's next status race; what it sent before does not
	// count (a device restarted from an older copy of its home asks for
	// its own entries back).
	Opener     keys.DeviceID
	FromOpener func() uint64
	// WholeStatus sends the held vector whole at each change, not only
	// the authors that changed: an opener must see a relay that reports
	// less than before (rollback detection).
	WholeStatus bool
	// Refresh, if above zero, runs a round at least this often even with
	// no growth (a relay's peer list changes without the log growing).
	Refresh time.Duration
	// Allowed, if set, is asked after each wait: false ends the stream
	// with a not-member Error (a device revoked while its stream is open).
	Allowed func() bool
	// Sent, if set, counts the entries sent.
	Sent func(n int)
}

// ErrNoLongerAllowed is Serve's error when Allowed ended the stream.
var ErrNoLongerAllowed = errors.New("the opener is no longer a member of the vault")

// Serve sends the opener what it lacks per req, then pushes growth until
// the stream or ctx ends; it returns why it ended.
func (ls LogServer) Serve(ctx context.Context, c *wire.Conn, req wire.LogRequest) error {
	theirs := protocol.Vector(wire.VectorMap(req.Vector))
	var fromBase uint64
	if ls.FromOpener != nil {
		fromBase = ls.FromOpener()
	}
	sentMembers := req.MemberSeq // records are numbered from 1
	status := statusSender{whole: ls.WholeStatus}
	var refresh <-chan time.Time
	if ls.Refresh > 0 {
		t := time.NewTicker(ls.Refresh)
		defer t.Stop()
		refresh = t.C
	}
	for {
		grown := ls.Source.Grown()
		if ls.FromOpener != nil {
			if s := ls.FromOpener(); s > fromBase && s > theirs[ls.Opener] {
				theirs[ls.Opener] = s
			}
		}
		if ls.Round != nil {
			if err := ls.Round(c, theirs); err != nil {
				return err
			}
		}
		records := ls.Source.Records()
		for ; sentMembers < uint64(len(records)); sentMembers++ {
			if err := c.SendRaw(wire.MsgMember, records[sentMembers].Encode()); err != nil {
				return err
			}
		}
		for _, r := range ls.Source.Offered().Missing(theirs) {
			n := 0
			err := ls.Source.Range(r.Author, r.From, r.To, func(e *entry.Entry) error {
				n++
				return c.SendRaw(wire.MsgEntry, e.Bytes())
			})
			if ls.Sent != nil {
				ls.Sent(n)
			}
			if err != nil {
				return fmt.Errorf("sending entries of %s: %w", r.Author, err)
			}
			if err := theirs.Apply(r); err != nil {
				return err
			}
		}
		if err := status.send(c, ls.Source.Held(), uint64(len(records))); err != nil {
			return err
		}
		if err := c.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-grown:
		case <-refresh:
		}
		if ls.Allowed != nil && !ls.Allowed() {
			c.SendError(wire.CodeNotMember, "revoked from this vault")
			return ErrNoLongerAllowed
		}
	}
}

// statusSender writes an answerer's LogStatus frames on one stream: the
// whole held vector the first time, then (unless whole) only the authors
// whose sequence changed (see wire.LogStatus), and nothing when none did.
// Each carries the answerer's membership sequence: a device whose
// membership log was damaged counts it as confirmed whole by a peer
// holding no record it lacks.
type statusSender struct {
	whole bool
	last  protocol.Vector // what the opener was last told; nil before the first
}

func (s *statusSender) send(c *wire.Conn, held protocol.Vector, memberSeq uint64) error {
	var out []wire.VectorEntry
	switch {
	case s.last == nil:
		out = wire.VectorOf(held)
	case s.whole:
		if s.last.Compare(held) == protocol.Equal {
			return nil
		}
		out = wire.VectorOf(held)
	default:
		for a, seq := range held {
			if s.last[a] != seq {
				out = append(out, wire.VectorEntry{Author: a, Seq: seq})
			}
		}
		if len(out) == 0 {
			return nil
		}
	}
	if err := c.Send(wire.MsgLogStatus, wire.LogStatus{Vector: out, MemberSeq: memberSeq}); err != nil {
		return err
	}
	s.last = held
	return nil
}

// The opener's side: after the Hello it sends its LogRequest, then reads
// until the stream ends.

// LogSink takes what the answerer of a log stream sends, frame by frame,
// on the reading goroutine. An error from any method ends the pull with
// that error.
type LogSink interface {
	// Member takes an encoded membership record, Entry an encoded entry
	// (each sink decodes and checks them as its kind of node does).
	Member(rec []byte) error
	Entry(e []byte) error
	Status(st wire.LogStatus) error
	Peers(ps wire.Peers) error
	// RelayStatus and Holds come from relays only.
	RelayStatus(st wire.RelayStatus) error
	Holds(h wire.Holds) error
}

// PullLog sends req on c (whose Hello is done) and hands every frame the
// answerer sends to sink until the stream fails or a sink method does; it
// returns that error (never nil: a log stream stays open until one side
// ends it).
func PullLog(c *wire.Conn, req wire.LogRequest, sink LogSink) error {
	if err := c.Send(wire.MsgLogRequest, req); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	for {
		t, payload, err := c.Read()
		if err != nil {
			return err
		}
		switch t {
		case wire.MsgMember:
			err = sink.Member(payload)
		case wire.MsgEntry:
			err = sink.Entry(payload)
		case wire.MsgLogStatus:
			var st wire.LogStatus
			if st, err = wire.ParseLogStatus(payload); err == nil {
				err = sink.Status(st)
			}
		case wire.MsgPeers:
			var ps wire.Peers
			if ps, err = wire.ParsePeers(payload); err == nil {
				err = sink.Peers(ps)
			}
		case wire.MsgRelayStatus:
			var st wire.RelayStatus
			if st, err = wire.ParseRelayStatus(payload); err == nil {
				err = sink.RelayStatus(st)
			}
		case wire.MsgHolds:
			var h wire.Holds
			if h, err = wire.ParseHolds(payload); err == nil {
				err = sink.Holds(h)
			}
		default:
			err = fmt.Errorf("%w on log stream: %s", wire.ErrUnexpected, t)
		}
		if err != nil {
			return err
		}
	}
}
