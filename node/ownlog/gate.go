package ownlog

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// state is where authoring stands after a start.
type state int

const (
	held       state = iota // nothing authored; scans record nothing, nothing is reconciled
	rescanning              // open for authoring; the owed rescan runs, reconciling waits for it
	open                    // authoring and reconciling as usual
)

// Gate is the authoring gate of one vault on this device. Its methods are
// safe for concurrent use.
type Gate struct {
	// wake (buffered, 1) says that authoring opened.
	wake chan struct{}

	mu sync.Mutex // guards the fields below
	// heard is, per peer or relay heard from in this run, the highest
	// sequence of this device's log it said it holds.
	heard map[keys.DeviceID]uint64
	// lostTo is the last sequence of this device's log that the database
	// lost at open, 0 if none.
	lostTo uint64
	state  state
	reason string // why authoring is held, for status
	// owed is the paths whose changes scans found while authoring was
	// held, for status. scanFailed is set when a scan failed before it
	// could note its changes (so owed may be short).
	owed       map[string]struct{}
	scanFailed bool
	// took counts own entries taken back from peers in this run; from is
	// the first; source the peer that named the highest.
	took, from uint64
	source     keys.DeviceID
	logged     bool // the recovery was reported
	// indexLags is set while the folder index may lag the logs (created,
	// rebuilt or reindexed at open), until the vault adopted its own
	// heads (IndexCaughtUp).
	indexLags bool
	forked    bool // a fork of the own log was seen
	forkSeq   uint64
	forkedAt  time.Time
}

// NewGate returns a held gate. lostTo is the last sequence of this
// device's log the database lost at open (0: none); indexLags says the
// folder index may lag the logs.
func NewGate(lostTo uint64, indexLags bool) *Gate {
	return &Gate{wake: make(chan struct{}, 1), heard: map[keys.DeviceID]uint64{}, state: held,
		reason: "waiting for a peer to say how much of this device's log it holds", lostTo: lostTo, indexLags: indexLags}
}

// Wake receives once each time authoring opens: the vault then runs the
// rescan it owes (or OpenWithoutRescan) and FinishRescan.
func (g *Gate) Wake() <-chan struct{} { return g.wake }

// OpenAtStart, called once at open after the first Decide, skips the
// rescan an opening gate owes when it opened at once (nobody else can hold
// this device's log): the first scan records as usual then.
func (g *Gate) OpenAtStart() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == rescanning {
		g.state = open
		select {
		case <-g.wake:
		default:
		}
	}
}

// Heard records that peer d holds seq of this device's log, head being the
// head held here. It reports whether the gate must be decided again
// (Decide): not for the usual case, a peer acknowledging what this device
// wrote once authoring is open.
func (g *Gate) Heard(d keys.DeviceID, seq, head uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.heard[d]; ok && old >= seq {
		return false
	}
	g.heard[d] = seq
	if seq > head {
		g.source = d
	}
	return !(g.state != held && seq <= head)
}

// Recovery is a tail taken back from peers, to report once.
type Recovery struct {
	Took, From uint64
	Source     keys.DeviceID
}

// Decide re-decides the gate (engine.AuthoringGate) after anything it
// depends on changed: a peer's vector, this device's head, the membership.
// peers are the members and relays other than this device; membersLost
// says the membership log is not known whole. It returns, once, the tail
// taken back when authoring opens after one was.
func (g *Gate) Decide(head uint64, peers []keys.DeviceID, membersLost bool) (Recovery, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ok, reason := engine.AuthoringGate(engine.AuthoringInput{Head: head, Heard: g.heard, Peers: peers, LostTo: g.lostTo, MembersLost: membersLost, Forked: g.forked})
	switch {
	case !ok:
		g.state, g.reason = held, reason
	case g.state == held:
		g.state, g.reason = rescanning, ""
		select {
		case g.wake <- struct{}{}:
		default:
		}
		if g.took > 0 && !g.logged {
			g.logged = true
			return Recovery{Took: g.took, From: g.from, Source: g.source}, true
		}
	}
	return Recovery{}, false
}

// Hold reports whether this device may not author now, and notes the
// paths of changes a scan found that it could not record.
func (g *Gate) Hold(changed []string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != held {
		return false
	}
	if len(changed) > 0 && g.owed == nil {
		g.owed = map[string]struct{}{}
	}
	for _, p := range changed {
		g.owed[p] = struct{}{}
	}
	return true
}

// ReconcileHeld reports whether reconciling must wait: until authoring
// opened and the rescan it owes has recorded what the user changed, an
// apply could meet an unrecorded local edit, and a resolution could not be
// recorded.
func (g *Gate) ReconcileHeld() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state != open
}

// Status is what status shows of the gate: empty when authoring is open,
// else why it is held and how many changes wait.
func (g *Gate) Status() (reason string, owed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != held {
		return "", 0
	}
	return g.reason, len(g.owed)
}

// NoteScanFailed records that a scan failed before it noted what it
// found, so the rescan owed when authoring opens may not be skipped.
func (g *Gate) NoteScanFailed() {
	g.mu.Lock()
	g.scanFailed = true
	g.mu.Unlock()
}

// FinishRescan opens reconciling after the owed rescan ran.
func (g *Gate) FinishRescan() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == rescanning {
		g.state, g.owed, g.scanFailed = open, nil, false
	}
}

// OpenWithoutRescan opens reconciling without the owed rescan when it
// would find nothing to record: a full scan has completed since the start
// (scanned), every scan while authoring was held found no change and none
// failed, and no entry of this device's log was taken back. The caller
// holds its scans, so none is in flight, and has adopted nothing into the
// index.
func (g *Gate) OpenWithoutRescan(scanned bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !scanned || g.scanFailed || len(g.owed) > 0 || g.took > 0 || g.state != rescanning {
		return false
	}
	g.state = open
	return true
}

// IndexMayLag reports whether the folder index may not name this device's
// own heads: own entries were taken back in this run, or the index was
// created or rebuilt at open and not caught up since.
func (g *Gate) IndexMayLag() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.took > 0 || g.indexLags
}

// IndexCaughtUp notes that the vault adopted its own heads into the index.
func (g *Gate) IndexCaughtUp() {
	g.mu.Lock()
	g.indexLags = false
	g.mu.Unlock()
}

// TookBack notes that own entry seq was taken back from a peer.
func (g *Gate) TookBack(seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.took == 0 {
		g.from = seq
	}
	g.took++
}

// Took is how many own entries were taken back in this run, from which.
func (g *Gate) Took() (n, from uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.took, g.from
}

// ForkSeen notes that a peer holds an entry of this device's log other
// than the one held here, at seq, seen at now; it reports whether this is
// the first (to say loudly, once), after which Decide keeps authoring held.
func (g *Gate) ForkSeen(seq uint64, now time.Time) (first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.forked {
		return false
	}
	g.forked, g.forkSeq, g.forkedAt = true, seq, now
	return true
}

// Fork reports a fork seen: from which entry, and when.
func (g *Gate) Fork() (seq uint64, at time.Time, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.forkSeq, g.forkedAt, g.forked
}

// ErrNotOwnEntry: an entry offered as this device's own tail is another
// author's.
var ErrNotOwnEntry = errors.New("entry is not this device's own")

// VerifyTail checks that raws continue this device's own log from head:
// each entry decodes, is of vault, has self as its author, is signed by
// self's key, and chains onto the one before it (head first): sequence
// +1, the previous entry's CID, a greater clock. It returns the entries in
// order, or the first failure: ErrNotOwnEntry, or entry's sentinel
// (ErrBadSignature, ErrWrongVault, ErrSeqGap, ErrPrevMismatch, ...).
func VerifyTail(vault keys.VaultID, self keys.DeviceID, head entry.Head, raws [][]byte) ([]*entry.Entry, error) {
	out := make([]*entry.Entry, 0, len(raws))
	for _, raw := range raws {
		dec, err := entry.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("taking back own entry: %w", err)
		}
		if dec.Author() != self {
			return nil, fmt.Errorf("taking back entry %s seq %d: %w", dec.Author().Short(), dec.Seq(), ErrNotOwnEntry)
		}
		e, err := entry.Validate(raw, vault, head)
		if err != nil {
			return nil, fmt.Errorf("taking back own entry: %w", err)
		}
		out = append(out, e)
		head = e.Head()
	}
	return out, nil
}
