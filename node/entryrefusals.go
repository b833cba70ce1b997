package node

import (
	"errors"
	"fmt"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folderstate"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Refused entries, told to the sender (node/heard has the record of
// refusals and fork probes): the refusing device sends the reason on the
// stream before it ends it, and the sender checks a claimed fork.

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
	case dec.Author() == v.device.ID():
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

// requestVector is the vector a log request to dev sends: what this
// device stores, except that a fork probe of dev asks for this device's
// own log from the probed entry on (once). It is the stored heads, not
// vector()'s (cut at a revoked author's last valid entry): a request says
// what this device holds, and a cut head would ask a peer that has not
// learned of the revocation yet for the very entries this device then
// refuses, on every pull (the relay asks the same way: relay/pull.go).
func (v *vault) requestVector(dev keys.DeviceID) protocol.Vector {
	vec := v.storedVector()
	from, ok := v.probes.Take(dev)
	self := v.device.ID()
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
	return &api.PathMessage{Code: api.CodeOwnLogForked, Since: folderstate.Since(at),
		Reason: fmt.Sprintf("this device's log has forked: a member holds another history of it from entry %d (a home restored from an older copy, or this device's key used on another machine), so what this device writes from now on never reaches that member", seq)}
}
