package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// The log protocol (/weft/log/1). Each device opens one log stream to each
// connected member for each shared vault and reads from it: the answerer
// first sends the membership records after the opener's MemberSeq, then
// every entry the opener lacks, then a LogStatus with its own vector;
// afterwards it keeps the stream open and pushes each new entry (and a
// LogStatus with what changed) as it is written. There is no polling:
// growth of the answerer's log wakes the pusher.

// eventKindInvalidEntry is the Kind of the error event for an entry a
// peer sent that failed validation.
const eventKindInvalidEntry = "invalid-entry"

// handleLog answers a log stream.
// ctx is Run's (Node.owned).
func (n *Node) handleLog(ctx context.Context, s network.Stream) {
	defer s.Close()
	f, v, dev, ok := n.openStream(s)
	if !ok {
		return
	}
	p, err := f.ExpectLimit(wire.MsgLogRequest, wire.MaxLogRequestFrame)
	if err != nil {
		return
	}
	_ = s.SetReadDeadline(time.Time{})
	req, err := wire.ParseLogRequest(p)
	if err != nil {
		f.SendError(wire.CodeProtocol, err.Error())
		return
	}
	// The opener sends nothing more but, when it refuses an entry, the
	// reason (readRefusal); this goroutine reads it, and ends once the
	// stream's read side is closed below. Whatever ends its read (a
	// refusal, the opener closing or resetting the stream) ends the
	// serving too: serveLog waits for the vault to grow, and on a quiet
	// vault a dropped opener's handler stayed parked until it did.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	refused := make(chan struct{})
	go func() {
		defer close(refused)
		defer cancel()
		v.readRefusal(f, dev)
	}()
	if err := v.serveLog(ctx, f, dev, req); err != nil && !isEOF(err) && !errors.Is(err, context.Canceled) {
		n.log.Debug("serving log", "peer", dev, "err", err)
	}
	_ = s.CloseRead()
	<-refused
}

// readRefusal reads what the opener of a log stream sends after its
// request: nothing, or one Error frame saying why it refused an entry
// before it ends the stream. A refusal of this device's own entry as a
// fork (wire.CodeLogForked) is the only way this device learns that a
// peer holds another history of its log when the peer holds no entry
// above this device's head: before, it showed in-sync while every new
// entry it wrote was refused (logtail.go, ownForkSeen).
//
// It reports whether an Error frame came.
func (v *vault) readRefusal(f *wire.Conn, dev keys.DeviceID) bool {
	_, _, err := f.ReadLimit(wire.MaxHelloFrame) // an Error frame is at most 1,035 bytes
	var we wire.Error
	if !errors.As(err, &we) {
		return false // the stream ended (or a stray frame: the stream ends anyway)
	}
	switch we.Code {
	case wire.CodeLogForked:
		// A claim, not a proof: the next pull from dev asks for its copy
		// of this device's log from there, and a copy that differs from
		// the one held here, signed by this device's own key, is the
		// proof (checkOwnHeld). A peer's word alone must not turn off the
		// authoring gate (logtail.go) or put the folder in error.
		var seq uint64
		_, _ = fmt.Sscanf(we.Reason, "entry %d", &seq)
		v.probeFork(dev, seq)
		v.noteRefusedEntry(dev, we.Reason)
	case wire.CodeInvalidEntry:
		v.noteRefusedEntry(dev, we.Reason)
	}
	return true
}

// openStream runs the answerer's Hello step of a log or chunk stream: it
// names the opener, reads its Hello (at most wire.MaxHelloFrame bytes,
// within helloTimeout), checks that this device serves the vault and the
// opener is one of its members or relays, and answers. ok is false when
// the stream was refused (counted, logged at a bounded rate, and closed or
// reset). The read deadline is left set, for the caller's next message.
func (n *Node) openStream(s network.Stream) (f *wire.Conn, v *vault, dev keys.DeviceID, ok bool) {
	dev, err := DeviceIDOf(s.Conn().RemotePeer())
	if err != nil {
		n.refuseRead(s, s.Conn().RemotePeer(), fmt.Errorf("%w: %w", refusal.ErrNotDevice, err))
		return nil, nil, dev, false
	}
	f = inboundConn(s)
	_ = s.SetReadDeadline(time.Now().Add(helloTimeout))
	v, err = n.acceptHello(f, dev)
	if errors.Is(err, errNotMember) {
		n.refuse(s, refusal.NotMember, dev, err)
		return nil, nil, dev, false
	}
	if err != nil {
		n.refuseRead(s, dev, err)
		return nil, nil, dev, false
	}
	f.SetCounter(n.counters(dev))
	return f, v, dev, true // the read deadline stays: the caller clears it
}

// acceptHello reads the opener's Hello, checks that this node serves the
// vault and that the opener is one of its members or relays, and answers.
// A vault not served here and a peer that is not a member get the same
// answer (wire.ReasonNotMember), so an outsider cannot tell which vaults
// a device serves; the error returned, for the log, says which it was.
func (n *Node) acceptHello(f *wire.Conn, dev keys.DeviceID) (*vault, error) {
	h, err := f.ReadHello()
	if err != nil {
		return nil, err
	}
	v := n.vault(h.Vault)
	if v == nil || !v.isPeer(dev) {
		f.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		if v == nil {
			return nil, fmt.Errorf("%w: vault %s is not served here", errNotMember, h.Vault)
		}
		return nil, fmt.Errorf("%w: not a member of vault %s", errNotMember, h.Vault)
	}
	return v, f.AcceptHello(h.Vault)
}

// serveLog streams to the opener what it lacks, then pushes growth until
// the stream or ctx ends. req is the opener's LogRequest.
func (v *vault) serveLog(ctx context.Context, f *wire.Conn, dev keys.DeviceID, req wire.LogRequest) error {
	theirs := vectorFromWire(req.Vector)
	v.tailHeard(dev, theirs[v.n.id.ID()]) // what the opener holds of this device's log (logtail.go)
	sentMembers := req.MemberSeq          // records are numbered from 1: records[i].Seq == i+1
	var st statusSender
	// Only what the opener sends after this request counts as held by it:
	// a device restarted from an older copy of its home asks here for its
	// own entries back, and what it had sent before must not hide them.
	fromBase := v.fromAuthorSeq(dev)
	if err := f.Send(wire.MsgPeers, v.peerAddrs(dev)); err != nil {
		return err
	}
	for {
		grown := v.growthSignal()
		records := v.memberRecords()
		for ; sentMembers < uint64(len(records)); sentMembers++ {
			if err := f.SendRaw(wire.MsgMember, records[sentMembers].Encode()); err != nil {
				return err
			}
		}
		mine := v.vector()
		// What the opener wrote itself and sent here since, it holds.
		if s := v.fromAuthorSeq(dev); s > fromBase && s > theirs[dev] {
			theirs[dev] = s
		}
		for _, r := range mine.Missing(theirs) {
			err := v.db.Range(r.Author, r.From, r.To, func(e *entry.Entry) error {
				return f.SendRaw(wire.MsgEntry, e.Bytes())
			})
			if err != nil {
				return fmt.Errorf("sending entries of %s: %w", r.Author, err)
			}
			if err := theirs.Apply(r); err != nil {
				return err
			}
		}
		// The status reports what this device holds in full: entries whose
		// file contents it has too (applied, inline, or superseded), so the
		// opener counts its work as safe only once it would survive the
		// opener being switched off.
		if err := st.send(f, v.heldVector(), uint64(len(records))); err != nil {
			return err
		}
		if err := f.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-grown:
		}
	}
}

// fromAuthorSeq is how far dev's own log reached this device from dev.
func (v *vault) fromAuthorSeq(dev keys.DeviceID) uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.fromAuthor[dev]
}

// memberSeq is the sequence of the last membership record held.
func (v *vault) memberSeq() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.members.Seq
}

// statusSender writes an answerer's LogStatus frames on one stream: the
// whole held vector the first time, then only the authors whose sequence
// changed (see wire.LogStatus), and nothing when none did.
type statusSender struct {
	last protocol.Vector // what the opener was last told; nil before the first
}

func (s *statusSender) send(f *wire.Conn, held protocol.Vector, memberSeq uint64) error {
	var out []wire.VectorEntry
	if s.last == nil {
		out = vectorToWire(held)
	} else {
		for a, seq := range held {
			if s.last[a] != seq {
				out = append(out, wire.VectorEntry{Author: a, Seq: seq})
			}
		}
		if len(out) == 0 {
			return nil
		}
	}
	if err := f.Send(wire.MsgLogStatus, wire.LogStatus{Vector: out, MemberSeq: memberSeq}); err != nil {
		return err
	}
	s.last = held
	return nil
}

// pullLog opens a log stream to p for v and ingests what arrives until
// the stream or ctx ends.
func (v *vault) pullLog(ctx context.Context, p peer.ID, dev keys.DeviceID) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v.setPullRestart(dev, cancel) // a fork probe restarts the pull (entryrefusals.go)
	defer v.setPullRestart(dev, nil)
	s, err := v.n.host.NewStream(ctx, p, ProtoLog)
	if err != nil {
		return fmt.Errorf("opening log stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	f := v.n.outboundConn(s, dev)
	err = f.OpenHello(v.id)
	if !v.isRelay(dev) {
		v.noteHello(dev, err) // revoked.go
	}
	if err != nil {
		return err
	}
	if err := f.Send(wire.MsgLogRequest, wire.LogRequest{Vector: vectorToWire(v.requestVector(dev)), MemberSeq: v.memberSeq()}); err != nil {
		return err
	}
	if err := f.Flush(); err != nil {
		return err
	}
	// A device sends its status whole once, then changes only (wire.LogStatus);
	// told is the whole of it, as the checks below expect. A relay sends
	// it whole every time, and a relay reporting less than before must
	// show as such (rollback.go), so its status replaces told.
	relay := v.isRelay(dev)
	src := &entrySource{dev: dev, fetch: v.piecesFrom(ctx, p, dev)}
	var told protocol.Vector
	for {
		t, payload, err := f.Read()
		if err != nil {
			return err
		}
		switch t {
		case wire.MsgMember:
			if err := v.ingestMember(payload); err != nil {
				return fmt.Errorf("membership record from %s: %w", dev, err)
			}
			v.memberCheck(dev) // memberrecover.go
		case wire.MsgEntry:
			if err := v.ingestEntry(payload, src); err != nil {
				v.tellRefusal(f, dev, payload, err)
				if isInvalidEntry(err) {
					// A forged, altered or foreign entry: nothing of it
					// is kept; say so, since only a faulty or hostile
					// peer sends one. (This device's own trouble, a full
					// disk or a closing database, is not the peer's.)
					v.log.Warn("refused an invalid entry from a peer; ending the stream", "peer", dev, "err", err)
					v.n.events.publish(Event{Type: EventError, Folder: v.cfg.Folder, Peer: dev.String(),
						Kind: eventKindInvalidEntry, Error: err.Error()})
				}
				return fmt.Errorf("entry from %s: %w", dev, err)
			}
		case wire.MsgPeers:
			ps, err := wire.ParsePeers(payload)
			if err != nil {
				return err
			}
			if err := v.learnPeers(ps); err != nil {
				v.log.Warn("remembering members' addresses", "peer", dev, "err", err)
			}
		case wire.MsgLogStatus:
			st, err := wire.ParseLogStatus(payload)
			if err != nil {
				return err
			}
			vec := vectorFromWire(st.Vector)
			if told != nil && !relay {
				for a, seq := range vec {
					told[a] = seq
				}
			} else {
				told = vec
			}
			vec = told.Clone()        // the checks below keep it
			v.checkWithheld(dev, vec) // rollback.go
			v.peerHolds(dev, vec)
			v.memberStatus(dev, st.MemberSeq) // memberrecover.go
		case wire.MsgRelayStatus:
			st, err := wire.ParseRelayStatus(payload)
			if err != nil {
				return err
			}
			if st.Vault == v.id {
				v.setRelayStatus(dev, relayStatus{status: st, at: v.n.now()})
			}
		case wire.MsgHolds:
			h, err := wire.ParseHolds(payload)
			if err != nil {
				return err
			}
			if relay {
				v.noteRelayHolds(dev, h) // relayholds.go
			}
		default:
			return fmt.Errorf("%w on log stream: %s", wire.ErrUnexpected, t)
		}
	}
}

func vectorToWire(v protocol.Vector) []wire.VectorEntry { return wire.VectorOf(v) }

func vectorFromWire(es []wire.VectorEntry) protocol.Vector { return wire.VectorMap(es) }
