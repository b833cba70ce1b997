package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/heard"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
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
		v.probes.Probe(dev, seq)
	case wire.CodeInvalidEntry:
	default:
		return true
	}
	if v.entryRefused.Due(dev, time.Now()) { // at most one line per heard.RefusedLogEvery per peer
		v.log.Warn("a peer refused an entry this device sent it", "peer", dev, "reason", we.Reason)
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
// the stream or ctx ends (internal/netsync's log session, as the relay
// runs it). req is the opener's LogRequest.
func (v *vault) serveLog(ctx context.Context, f *wire.Conn, dev keys.DeviceID, req wire.LogRequest) error {
	v.tailHeard(dev, vectorFromWire(req.Vector)[v.device.ID()]) // what the opener holds of this device's log (logtail.go)
	if err := f.Send(wire.MsgPeers, v.book.Exchange(v.roster.Members(), v.device.ID(), dev)); err != nil {
		return err
	}
	ls := netsync.LogServer{
		Source: logSource{v},
		// What the opener wrote itself and sent here since its request,
		// it holds (netsync.LogServer.FromOpener).
		Opener: dev, FromOpener: func() uint64 { return v.fromAuthorSeq(dev) },
		Allowed: func() bool { return v.isPeer(dev) },
	}
	return ls.Serve(ctx, f, req)
}

// logSource is the vault's log as the log session serves it. Its held
// vector reports what this device holds in full: entries whose file
// contents it has too (applied, inline, or superseded), so the opener
// counts its work as safe only once it would survive the opener being
// switched off.
type logSource struct{ v *vault }

func (s logSource) Grown() <-chan struct{}   { return s.v.growthSignal() }
func (s logSource) Records() []member.Record { return s.v.roster.Records() }
func (s logSource) Offered() protocol.Vector { return s.v.vector() }
func (s logSource) Held() protocol.Vector    { return s.v.heldVector() }
func (s logSource) Range(author keys.DeviceID, from, to uint64, fn func(*entry.Entry) error) error {
	return s.v.db.Range(author, from, to, fn)
}

// fromAuthorSeq is how far dev's own log reached this device from dev.
func (v *vault) fromAuthorSeq(dev keys.DeviceID) uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.view.FromAuthor(dev)
}

// pullLog opens a log stream to p for v and ingests what arrives until
// the stream or ctx ends.
func (v *vault) pullLog(ctx context.Context, p peer.ID, dev keys.DeviceID) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v.probes.SetRestart(dev, cancel) // a fork probe restarts the pull (node/heard)
	defer v.probes.SetRestart(dev, nil)
	s, err := v.agent.newStream(ctx, p, ProtoLog)
	if err != nil {
		return fmt.Errorf("opening log stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	f := v.agent.outboundConn(s, dev)
	err = f.OpenHello(v.id)
	if !v.isRelay(dev) {
		v.noteHello(dev, err) // revoked.go
	}
	if err != nil {
		return err
	}
	req := wire.LogRequest{Vector: vectorToWire(v.requestVector(dev)), MemberSeq: v.roster.Seq()}
	return netsync.PullLog(f, req, &logPull{v: v, f: f, dev: dev, relay: v.isRelay(dev), src: &entrySource{dev: dev, fetch: v.piecesFrom(ctx, p, dev)}})
}

// logPull takes what a peer's log stream brings into the vault
// (netsync.LogSink).
type logPull struct {
	v     *vault
	f     *wire.Conn
	dev   keys.DeviceID
	relay bool
	src   *entrySource
	// told is the whole of what the peer said it holds. A device sends
	// its status whole once, then changes only (wire.LogStatus). A relay
	// sends it whole every time, and a relay reporting less than before
	// must show as such (rollback.go), so its status replaces told.
	told protocol.Vector
}

func (l *logPull) Member(payload []byte) error {
	if err := l.v.ingestMember(payload); err != nil {
		return fmt.Errorf("membership record from %s: %w", l.dev, err)
	}
	l.v.memberCheck(l.dev) // memberrecover.go
	return nil
}

func (l *logPull) Entry(payload []byte) error {
	v := l.v
	if err := v.ingestEntry(payload, l.src); err != nil {
		v.tellRefusal(l.f, l.dev, payload, err)
		if isInvalidEntry(err) {
			// A forged, altered or foreign entry: nothing of it is kept;
			// say so, since only a faulty or hostile peer sends one.
			// (This device's own trouble, a full disk or a closing
			// database, is not the peer's.)
			v.log.Warn("refused an invalid entry from a peer; ending the stream", "peer", l.dev, "err", err)
			v.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Peer: l.dev.String(),
				Kind: eventKindInvalidEntry, Error: err.Error()})
		}
		return fmt.Errorf("entry from %s: %w", l.dev, err)
	}
	return nil
}

func (l *logPull) Status(st wire.LogStatus) error {
	vec := vectorFromWire(st.Vector)
	// A peer that now holds more in full may now have the chunks a failed
	// fetch lacked: a relay that fetched them from their author after it
	// offered the entry. The next pass retries at once instead of at the
	// next reconcile tick (up to reconcile.Retry later).
	grew := false
	for a, seq := range vec {
		if seq > l.told[a] {
			grew = true
		}
	}
	if l.told != nil && !l.relay {
		for a, seq := range vec {
			l.told[a] = seq
		}
	} else {
		l.told = vec
	}
	vec = l.told.Clone()                   // the checks below keep it
	l.v.claims().CheckWithheld(l.dev, vec) // node/claims
	l.v.peerHolds(l.dev, vec)
	l.v.memberStatus(l.dev, st.MemberSeq) // memberrecover.go
	if grew {
		l.v.kick()
	}
	return nil
}

func (l *logPull) Peers(ps wire.Peers) error {
	if err := l.v.book.Learn(ps, l.v.device.ID(), l.v.roster.IsMember); err != nil {
		l.v.log.Warn("remembering members' addresses", "peer", l.dev, "err", err)
	}
	return nil
}

func (l *logPull) RelayStatus(st wire.RelayStatus) error {
	if st.Vault == l.v.id {
		l.v.setRelayQuota(l.dev, heard.RelayQuota{Status: st, At: l.v.now()})
	}
	return nil
}

func (l *logPull) Holds(h wire.Holds) error {
	if l.relay {
		l.v.relayWord.NoteHolds(l.dev, l.v.device.ID(), h) // node/heard
	}
	return nil
}

func vectorToWire(v protocol.Vector) []wire.VectorEntry { return wire.VectorOf(v) }

func vectorFromWire(es []wire.VectorEntry) protocol.Vector { return wire.VectorMap(es) }
