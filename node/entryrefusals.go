package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Refused entries, told to the sender. A device that pulls a peer's log
// and refuses one of the entries it is sent ends the stream; before, it
// ended it without a word, so the sender never knew. A device whose own
// log had forked (a home restored from an older copy, one device key on two
// machines) kept writing entries its peers refused, 23 times in 2 minutes
// in one report, and showed in-sync. Now the refusing device sends the
// reason on the stream first (an Error frame: wire.CodeLogForked for an
// entry of the sender's own log that does not chain onto what it holds of
// that log, wire.CodeInvalidEntry otherwise), and the sender reads it
// (readRefusal in logproto.go). A claimed fork is then checked: the next
// pull from that peer asks for its copy of this device's log from the
// entry before the refused one (forkProbes, requestVector), and a copy
// that differs from the one held here, signed by this device's own key,
// makes the folder's state error with code own-log-forked (logtail.go,
// checkOwnHeld). Any refusal is logged.

// refusedLogEvery bounds how often a peer's refusals of this device's
// entries are logged.
const refusedLogEvery = 10 * time.Minute

// entryRefusals is when each peer's refusal of an entry this device sent
// was last logged. Its methods are safe for concurrent use.
type entryRefusals struct {
	mu     sync.Mutex
	logged map[keys.DeviceID]time.Time
}

// tellRefusal tells the answerer of a log stream why this device refuses
// the entry raw it sent (err): nothing for a refusal that is this device's
// own doing (its full disk, an entry too far ahead to hold yet) or its own
// log's fork (the answerer holds the history this device lost).
func (v *vault) tellRefusal(f *wire.Conn, dev keys.DeviceID, raw []byte, err error) {
	if !isInvalidEntry(err) {
		return // this device's own trouble (a disk, a closing database): the peer did nothing wrong
	}
	dec, derr := entry.Decode(raw)
	switch {
	case derr != nil:
		f.SendError(wire.CodeInvalidEntry, err.Error())
	case dec.Author() == v.n.id.ID():
		// This device's own log: it is the one that forked (logtail.go).
	case dec.Author() == dev && errors.Is(err, entry.ErrPrevMismatch):
		f.SendError(wire.CodeLogForked, fmt.Sprintf("entry %d of your own log does not follow the entry %d of it held here: your log has forked", dec.Seq(), dec.Seq()-1))
	default:
		f.SendError(wire.CodeInvalidEntry, fmt.Sprintf("entry %d by %s: %v", dec.Seq(), dec.Author().Short(), err))
	}
}

// isInvalidEntry reports whether err says an entry failed validation: a
// fault of what the peer sent, not of this device.
func isInvalidEntry(err error) bool {
	for _, e := range []error{entry.ErrMalformed, entry.ErrNonCanonical, entry.ErrUnknownFormat, entry.ErrTooLarge,
		entry.ErrBadSignature, entry.ErrWrongVault, entry.ErrSeqGap, entry.ErrSeqReplay, entry.ErrDuplicate,
		entry.ErrPrevMismatch, entry.ErrClockNotIncreasing, entry.ErrWrongEpoch, entry.ErrBodyAuth, entry.ErrBadPath,
		entry.ErrBadVersion, entry.ErrHeaderMismatch, entry.ErrPieceMismatch, member.ErrNotMember, member.ErrRevokedEntry} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// due reports whether a refusal by dev at now is to be logged: the first,
// and then at most one per refusedLogEvery.
func (r *entryRefusals) due(dev keys.DeviceID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.logged[dev]; ok && now.Sub(last) < refusedLogEvery {
		return false
	}
	if r.logged == nil {
		r.logged = map[keys.DeviceID]time.Time{}
	}
	r.logged[dev] = now
	return true
}

// forkProbes are the fork probes asked for, per peer, and how to end the
// running log pull from each (so that the next pull probes). Its methods
// are safe for concurrent use.
type forkProbes struct {
	mu      sync.Mutex
	from    map[keys.DeviceID]uint64             // peer -> entry of the own log to compare with its copy
	restart map[keys.DeviceID]context.CancelFunc // ends the running log pull from a peer
}

// probe notes that dev says entry seq of this device's log does not chain
// onto what it holds: the next pull from dev asks for its copy of this log
// from seq-1 on, to compare. The running pull from dev is ended.
func (p *forkProbes) probe(dev keys.DeviceID, seq uint64) {
	if seq < 2 {
		seq = 2 // the claim names no usable entry: compare from the first
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.from == nil {
		p.from = map[keys.DeviceID]uint64{}
	}
	p.from[dev] = seq - 1
	if r := p.restart[dev]; r != nil {
		r() // the running pull asked with the full vector; the next one probes
	}
}

// setRestart records (nil: forgets) how to end the running log pull from
// dev.
func (p *forkProbes) setRestart(dev keys.DeviceID, cancel context.CancelFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cancel == nil {
		delete(p.restart, dev)
		return
	}
	if p.restart == nil {
		p.restart = map[keys.DeviceID]context.CancelFunc{}
	}
	p.restart[dev] = cancel
}

// take returns the probe asked of dev, once.
func (p *forkProbes) take(dev keys.DeviceID) (from uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from, ok = p.from[dev]
	delete(p.from, dev)
	return from, ok
}

// requestVector is the vector a log request to dev sends: what this
// device stores, except that a fork probe of dev asks for this device's
// own log from the probed entry on (once). It is the stored heads, not
// vector()'s (cut at a revoked author's last valid entry): a request says
// what this device holds, and a cut head would ask a peer that has not
// learned of the revocation yet for the very entries this device then
// refuses, on every pull (the relay asks the same way: relay/pull.go).
func (v *vault) requestVector(dev keys.DeviceID) protocol.Vector {
	vec := v.storedVector()
	from, ok := v.probes.take(dev)
	self := v.n.id.ID()
	if ok && vec[self] >= from {
		vec = vec.Clone()
		vec[self] = from - 1
	}
	return vec
}

// forkMessage is the status error of a forked own log, or nil.
func (v *vault) forkMessage() *api.PathMessage {
	seq, at, forked := v.tail.Fork()
	if !forked {
		return nil
	}
	return &api.PathMessage{Code: api.CodeOwnLogForked, Since: sinceOf(at),
		Reason: fmt.Sprintf("this device's log has forked: a member holds another history of it from entry %d (a home restored from an older copy, or this device's key used on another machine), so what this device writes from now on never reaches that member", seq)}
}
