package node

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/ownlog"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// A device never signs two entries with one (author, seq). After a start
// it cannot tell from its own disk alone whether it still holds the whole
// of its own log: a segment cut short (vaultdb's OpenReport.Lost says so)
// or a home restored from an older copy of itself (nothing says so) both
// leave its head below what peers and relays already hold of it. Authoring
// at that point would reuse sequence numbers those peers hold: a fork
// they refuse, and every later entry of this device with it.
//
// So after every start authoring is held (node/ownlog's Gate) until a peer's or a
// relay's vector has been heard and every entry of this device's log it
// names has been taken back (they are this device's own, signed by its
// key: ownlog.VerifyTail), or nobody else could hold any of it. While held,
// scans record nothing and reconciling waits, so the folder and its index
// stay as they were: the user's edits are still on disk and are recorded
// by the rescan that runs when authoring opens (tailLoop). docs/sync.md,
// "This device's own log", has the rules and what they cost.

// errAuthoringHeld: this device may not write an entry yet (the gate).
var errAuthoringHeld = api.Classified(api.ErrConflict, "this device's log is not confirmed complete yet; authoring waits for a peer")

// eventKindOwnLogForked is the Kind of the error event for a peer holding
// an entry of this device's log that differs from the one held here.
const eventKindOwnLogForked = "own-log-forked"

// ownLostTo is the last sequence of self's log that the database lost at
// open (rep.Lost), 0 if none.
func ownLostTo(self keys.DeviceID, rep vaultdb.OpenReport) uint64 {
	var to uint64
	for _, g := range rep.Lost {
		if g.Author == self && g.Dropped > 0 {
			to = max(to, g.Seq+uint64(g.Dropped)-1)
		}
	}
	return to
}

// tailHeard records what peer d said it holds of this device's log (seq)
// and re-decides the gate when that could change it.
func (v *vault) tailHeard(d keys.DeviceID, seq uint64) {
	if v.tail.Heard(d, seq, v.db.Head(v.device.ID()).Seq) {
		v.tailCheck()
	}
}

// tailCheck re-decides the gate after anything it depends on changed: a
// peer's vector, this device's head, the membership.
func (v *vault) tailCheck() {
	self := v.device.ID()
	var peers []keys.DeviceID
	for _, d := range v.roster.Members() {
		if d != self {
			peers = append(peers, d)
		}
	}
	for _, r := range v.relays() {
		peers = append(peers, r.dev)
	}
	head := v.db.Head(self).Seq
	if rec, ok := v.tail.Decide(head, peers, v.membershipLost()); ok {
		v.log.Warn("took back this device's own log tail from peers; it had been lost here",
			"peer", rec.Source, "from_seq", rec.From, "seq", head, "entries", rec.Took)
		v.events.Publish(api.Event{Type: api.EventLogTailRecovered, Folder: v.cfg.Folder, Peer: rec.Source.String(), Seq: head, Count: int(rec.Took)})
	}
}

// tailLoop runs, each time authoring opens, the rescan that records what
// scans could not while it was held, then lets reconciling go on. It runs
// until ctx ends; startVault owns it.
func (v *vault) tailLoop(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-v.cleaned:
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.tail.Wake():
		}
		adopted := 0
		if v.adoptionOwed() {
			adopted = v.adoptOwnHeads()
		}
		if adopted > 0 || !v.openWithoutRescan(ctx) {
			if _, err := v.scan(ctx, nil); err != nil {
				if ctx.Err() != nil {
					return
				}
				v.log.Error("scan after this device's log was confirmed", "err", err)
			}
			v.tail.FinishRescan()
		}
		v.kick()
	}
}

// openWithoutRescan opens reconciling without the owed rescan when it
// would find nothing to record: a full scan has completed since the start
// (the index described the folder then, or it recorded the differences),
// every scan while authoring was held found no change (owed is empty) and
// none failed, and no entry of this device's log was taken back (the
// caller has also adopted nothing into the index). It first waits for the
// first scan of this run, which records as usual once authoring is open
// (a peer often confirms the log before the first scan has even started:
// it waits for the watcher's setup), then holds scanMu, so no scan is in
// flight: each one so far either noted its changes as owed or, once
// authoring had opened, recorded them itself. After a restart with a peer
// online this spares a second full scan of the folder (0.47 s of CPU at
// 100,000 files, docs/benchmarks.md).
func (v *vault) openWithoutRescan(ctx context.Context) bool {
	select {
	case <-v.firstScan:
	case <-ctx.Done():
		return false
	}
	v.scanMu.Lock()
	defer v.scanMu.Unlock()
	v.mu.Lock()
	scanned := v.scanned
	v.mu.Unlock()
	return v.tail.OpenWithoutRescan(scanned)
}

// metaOwnAdopted holds, as 8 bytes big-endian, the sequence of this
// device's own log head when adoptOwnHeads last ran to the end: up to it,
// the folder index names this device's own single heads.
const metaOwnAdopted = "own-heads-adopted"

// adoptionOwed reports whether adoptOwnHeads could find anything: own
// entries were taken back from peers in this run, the index may lag the
// logs (created or rebuilt at open), or this device's log is past what the
// index is known to name (metaOwnAdopted: an own entry taken back in a run
// that stopped before adopting, or appended without its index update).
// Every own entry a scan or an apply records goes with the index update
// that names its versions (AppendWith) and carries metaOwnAdopted along
// (advanceOwnAdopted), so when none of this holds the pass over every path
// (0.22 s of a restart's CPU at 100,000 files, docs/benchmarks.md) would
// find nothing.
func (v *vault) adoptionOwed() bool {
	if v.tail.IndexMayLag() {
		return true
	}
	b, ok, err := v.db.Meta(metaOwnAdopted)
	if err != nil || !ok || len(b) != 8 {
		return true
	}
	return binary.BigEndian.Uint64(b) != v.db.Head(v.device.ID()).Seq
}

// advanceOwnAdopted carries metaOwnAdopted along in u, the update that
// appends this device's entry seq with the index records naming its
// versions: if the index named every own head up to seq-1, it names them
// up to seq once u is committed. So a device that records its own changes
// does not owe a full adoption pass at its next start.
func (v *vault) advanceOwnAdopted(u *vaultdb.Update, seq uint64) {
	b, ok, err := v.db.Meta(metaOwnAdopted)
	if err != nil || !ok || len(b) != 8 || binary.BigEndian.Uint64(b)+1 != seq {
		return
	}
	u.SetMeta(metaOwnAdopted, binary.BigEndian.AppendUint64(nil, seq))
}

// adoptOwnHeads points the folder index, for every path whose one head is
// a version this device wrote, at that version when the index names none
// or another. This device wrote such a version from its own folder (a scan,
// a resolution or a restore records what it put on disk), and nothing has
// replaced it since, so the folder holds it or a later local change of it.
// That is the case after a restored home's old index, or an index rebuilt
// after the log tail was lost, meets the tail taken back from peers.
// Without this the rescan saw the folder's content as new versions
// concurrent with this device's own (a copy of every file touched since
// the backup, and a user's edit made meanwhile as a conflict with the
// device itself). The adopted record has no lstat identity, so the rescan
// rehashes the file: the same content records nothing, a change records a
// version that supersedes the adopted one, a missing file a deletion.
//
// It returns how many paths it adopted.
func (v *vault) adoptOwnHeads() int {
	self := v.device.ID()
	u := &vaultdb.Update{}
	adopt := map[string]vaultdb.Record{}
	v.mu.Lock()
	// Read before the loop: an own entry appended meanwhile (scans and
	// applies wait while authoring is held, as it is here) leaves the
	// recorded sequence behind the head, which only makes the next start
	// adopt again.
	ownSeq := v.db.Head(self).Seq
	for _, p := range v.view.Graph.Paths() {
		h, n := v.view.Graph.FirstHead(p)
		if n != 1 || h.ID.Author != self || h.Kind == protocol.KindDeletion {
			continue
		}
		id := h.ID
		if cur, ok := v.index.Get(p); ok && cur.Version == id {
			continue
		}
		ver, ok := v.view.Body(id)
		if !ok {
			continue
		}
		rec := vaultdb.Record{Version: id, Kind: ver.Kind, Size: ver.Size, MTime: ver.MTime, Mode: ver.Mode,
			Hash: ver.Hash, Chunks: slices.Clone(ver.Chunks), Target: ver.Target}
		adopt[p] = rec
		u.PutIndex(p, rec)
	}
	v.mu.Unlock()
	u.SetMeta(metaOwnAdopted, binary.BigEndian.AppendUint64(nil, ownSeq))
	if err := v.db.Commit(u); err != nil {
		v.log.Warn("adopting this device's own versions into the folder index", "err", err)
		return len(adopt) // not adopted, but the rescan is owed all the same
	}
	v.mu.Lock()
	for p, rec := range adopt {
		v.setIndexLocked(p, rec)
	}
	v.adoptPasses++
	v.mu.Unlock()
	v.tail.IndexCaughtUp()
	if len(adopt) > 0 {
		v.log.Info("folder index points at this device's own latest versions again", "paths", len(adopt))
	}
	return len(adopt)
}

// ownForkSeen reports, once, that a peer holds an entry of this device's
// log other than the one held here: the log forked (a home restored from
// an old copy that authored before this gate existed, or a copied device
// key). Nothing can mend it here; it is said loudly instead of silently.
func (v *vault) ownForkSeen(seq uint64, err error) {
	if !v.tail.ForkSeen(seq, v.now()) {
		return
	}
	v.log.Error("a peer holds a different entry of this device's own log: the log forked", "seq", seq, "err", err)
	v.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: eventKindOwnLogForked, Seq: seq, Error: err.Error()})
	v.tailCheck()
}

// verifyOwnNext checks an entry of this device's own log a peer sent, the
// one after head (ownlog.VerifyTail). An authentic entry that does not chain
// onto head is a fork of the own log, reported once (ownForkSeen).
func (v *vault) verifyOwnNext(raw []byte, head entry.Head) (*entry.Entry, error) {
	es, err := ownlog.VerifyTail(v.id, v.device.ID(), head, [][]byte{raw})
	if err != nil {
		if errors.Is(err, entry.ErrPrevMismatch) {
			v.ownForkSeen(head.Seq+1, err)
		}
		return nil, err
	}
	return es[0], nil
}

// checkOwnHeld compares an entry of this device's own log that a peer
// sent, at or below the head held here, with the one held: a different
// entry is a fork of the own log (ownForkSeen).
func (v *vault) checkOwnHeld(dec *entry.Entry) {
	held, err := v.db.Get(dec.Author(), dec.Seq())
	if err != nil || held.CID().Equals(dec.CID()) {
		return
	}
	if _, err := entry.DetectFork(held, dec); err == nil {
		v.ownForkSeen(dec.Seq(), fmt.Errorf("entry %d: held %s, peer's %s", dec.Seq(), held.CID(), dec.CID()))
	}
}

// changePaths lists the paths of changes.
func changePaths(changes []folder.Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}
