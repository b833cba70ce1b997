package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/damaged"
	"github.com/weftsync/weft/node/engineloop"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/folderguard"
	"github.com/weftsync/weft/node/heard"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/node/localchunks"
	"github.com/weftsync/weft/node/logview"
	"github.com/weftsync/weft/node/memindex"
	"github.com/weftsync/weft/node/ownlog"
	"github.com/weftsync/weft/node/peerbook"
	"github.com/weftsync/weft/node/pieces"
	"github.com/weftsync/weft/node/reconcile"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/node/watchfallback"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// vault is one vault on this device: its keys, its database, its folder,
// and the in-memory state derived from them (view: the version graph, the
// decrypted bodies, node/logview; index: the folder index; chunks: where
// each chunk lies locally).
//
// Locking: mu guards the derived state but the engine, which its loop
// goroutine owns (node/engineloop: work handed to it may take mu, so mu is
// never held while waiting for the loop). IO on the folder and the
// network happens without mu held; the database serialises itself.
type vault struct {
	// agent is the Node that runs the vault (agent.go); the rest of what
	// the vault has of it is given at open.
	agent  agent
	device *keys.Identity // this device
	events *api.Bus
	now    func() time.Time
	stats  *nodeStats
	// maxFileChunks and pieceCfg are Config.MaxFileChunks and
	// Config.Pieces (test limits).
	maxFileChunks int
	pieceCfg      entry.PieceParams

	cfg     home.Vault
	id      keys.VaultID
	secrets keys.VaultSecrets // what a member holds of the vault: never the root secret
	ek      keys.EpochKeys    // epoch 0's keys, fixed at open; code uses the methods of epochs.go
	ck      chunk.Keys        // epoch 0's chunk keys, likewise
	// crypt opens and seals under the key epochs this device knows
	// (node/keyring); it has its own locks.
	crypt *keyring.Ring
	// chunks re-creates chunks from the folder's files (node/localchunks);
	// it has its own lock, a leaf, and setIndexLocked keeps it current.
	chunks *localchunks.Files
	// local re-creates the chunks this device holds (node/localchunks); set
	// at open, once the version store is.
	local  localchunks.Source
	db     *vaultdb.DB
	pieces *pieces.Pieces // expands and repairs chunk lists from the piece store (node/pieces)
	fs     folder.FS
	log    *slog.Logger
	// report tells the events, the doctor and the metrics what happens in
	// the folder (hooks.go).
	report folderReport

	// relayWord is what each relay last said about this vault's quota
	// there and about what the devices it serves hold (node/heard); it
	// has its own lock.
	relayWord heard.RelayReports

	folding folder.Folding
	scanner *folder.Scanner
	applier *folder.Applier

	// firstScan is closed once the first scan under Run has ended
	// (recorded, or refused by the folder guard).
	firstScan chan struct{}
	// kicked (buffer 1) wakes the vault's reconcile loop (kick).
	kicked chan struct{}
	// rec runs the vault's reconcile passes (node/reconcile), on the one
	// goroutine Run starts for it.
	rec *reconcile.Reconciler
	// fguard is the folder guard's stop (node/folderguard); it has its
	// own lock.
	fguard *folderguard.Guard
	// onDecided, set only by tests, runs after a path's decision is made
	// and before it is carried out (decidedHook): a test makes a scan
	// race the decision there. One vault's, not a global switch.
	onDecided atomic.Pointer[func(path string)]
	// home is why writes to the home fail, if they do (homefull.go); it
	// has its own lock.
	home homefull.Guard

	// scanMu serialises scans (the scanner runs one at a time).
	scanMu sync.Mutex
	// authorMu serialises writing this device's own entries, so sequence
	// numbers and clocks are assigned in order.
	authorMu sync.Mutex
	// tail holds authoring after a start until this device's own log is
	// known whole (logtail.go); mh is whether the membership log is known
	// whole (memberrecover.go).
	tail *ownlog.Gate
	mh   memberHealth
	// book remembers where members were last reachable (node/peerbook); it
	// has its own lock.
	book *peerbook.Book
	// fallback is what rescans stand in for an incomplete or stopped
	// watcher (watchfallback.go); it has its own lock.
	fallback watchfallback.Fallback

	mu     sync.Mutex     // guards the fields below
	roster *roster.Roster // membership (node/roster): its own lock
	// view is what the vault derived from its log (node/logview): the
	// graph, the bodies, the clocks, how far each author is folded in and
	// held, the entries held back; mu guards it.
	view        *logview.View
	index       *memindex.Index // the folder index in memory, changed by setIndexLocked alone
	grow        chan struct{}   // closed and replaced whenever the log grows
	cleaned     chan struct{}   // closed after the first scan, once the temp files of earlier runs are removed
	opened      openStats       // how openVault rebuilt the graph (graphsnap.go)
	scanning    bool
	scanned     bool // the first full scan has completed
	fullScans   int  // full scans completed since the vault opened
	adoptPasses int  // adoptOwnHeads passes completed since the vault opened
	pending     pendingCounts
	damaged     damaged.Files // damaged files being written again (rot.go, node/damaged)

	keep *keeper.Keeper // the local version store and its queue (node/keeper); set at open

	refused heard.Membership // members accepting or refusing this device (revoked.go)
	// peers is what each member and relay last said it holds (its
	// LogStatus); it has its own lock.
	peers heard.Holdings
	// entryRefused is when peers' refusals of entries were logged
	// (entryrefusals.go).
	entryRefused heard.EntryRefusals
	// probes are the fork probes asked of peers (entryrefusals.go); it
	// has its own lock.
	probes heard.ForkProbes
	// engine owns the vault's reconcile engine (protocol/engine): which
	// paths need a decision, their waits for history and errors, the
	// mass-delete guard (Deletes, massdelete.go) and the peers' versions
	// applied in the last engine.ApplyRaceWindow (Recent, applyrace.go).
	// Its loop goroutine is the engine's one owner (node/engineloop); it
	// has its own lock.
	engine *engineloop.Loop
	// rules are the engine's rules, which are pure and never change: what
	// a noted apply supersedes is computed from them at once, under v.mu,
	// with the graph as it was at the apply.
	rules engine.Rules
}

// pendingCounts are what the vault still has to do.
type pendingCounts struct {
	toFetch int
	// passBytes estimates the bytes the current reconcile pass writes
	// (engine.BytesToWrite, set when the pass starts, 0 between passes);
	// written counts the bytes of files it has written so far (the
	// appliers add to it, without v.mu).
	passBytes int64
	written   atomic.Int64
}

// storedVector is, per author, the head of the stored log, revoked
// authors' entries past their revocation included: what a log request
// says this device holds (requestVector).
func (v *vault) storedVector() protocol.Vector {
	out := protocol.Vector{}
	for a, h := range v.db.Heads() {
		out[a] = h.Seq
	}
	return out
}

// vector is this device's version vector, what it offers and counts: the
// stored heads, a revoked author's log ending at its revocation's upto.
// v.mu must not be held (acceptedSeq takes it).
func (v *vault) vector() protocol.Vector {
	out := v.storedVector()
	for a, s := range out {
		out[a] = v.roster.Accepted(a, s)
	}
	return out
}

// growthSignal returns a channel closed at the next growth of the log or
// membership.
func (v *vault) growthSignal() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.grow
}

// grew wakes everyone waiting on growthSignal. v.mu must be held.
func (v *vault) grewLocked() {
	close(v.grow)
	v.grow = make(chan struct{})
}

// ingestMember applies a membership record received from a peer
// (roster.Roster.Ingest) and does what follows a new one (memberApplied).
func (v *vault) ingestMember(raw []byte) error {
	r, err := v.roster.Ingest(raw)
	if homefull.IsDiskFull(err) {
		v.noteHomeWrite("storing a membership record", err)
	}
	if err != nil || r == nil {
		return err
	}
	v.memberApplied(*r)
	if r.Op == member.OpAdd || r.Op == member.OpRecover {
		// Every device says who joined, not only the one that admitted it,
		// with the words both devices of the join showed (format-3 add
		// records carry them).
		v.log.Info("device joined", "peer", r.Device, "name", r.Name, "words", r.Words, "op", r.Op, "by", r.Signer)
		v.events.Publish(api.Event{Type: api.EventPeerJoined, Peer: r.Device.String(), Name: r.Name, Folder: v.cfg.Folder, Words: r.Words})
		v.agent.goRun(func(context.Context) { v.agent.syncWithDevice(r.Device) })
	}
	return nil
}

// admit records a new member named name ("" for none), admitted by this
// device.
func (v *vault) admit(d keys.DeviceID, name string) error {
	r, err := v.roster.Admit(d, name, "") // seals the epoch secrets after 0 to d
	if err != nil {
		return err
	}
	v.memberApplied(r)
	return nil
}

// ingestEntry validates an entry from a peer and, if new, stores it and
// folds its versions into the graph. An entry that is ahead of its
// author's head (an earlier one has not arrived yet, which happens when
// several peers stream to this device at once) is held back and ingested
// once the gap fills.
//
// src is the peer that sent it (nil in tests: none, and no pieces can be
// fetched).
func (v *vault) ingestEntry(raw []byte, src *entrySource) error {
	dec, err := entry.Decode(raw)
	if err != nil {
		return err
	}
	author := dec.Author()
	if err := v.roster.CheckAuthor(author, dec.Seq()); err != nil { // a non-member, or revoked before this entry
		return err
	}
	head := v.db.Head(author)
	switch {
	case dec.Seq() <= head.Seq:
		v.noteFromAuthor(src, author, dec.Seq())
		if author == v.device.ID() {
			v.checkOwnHeld(dec) // logtail.go
		}
		return nil // already held; a fork would show in db.Append on a re-send
	case dec.Seq() > head.Seq+1:
		// Check it is authentic before holding on to it.
		if _, err := entry.Validate(raw, v.id, entry.Head{}); err != nil && !errors.Is(err, entry.ErrSeqGap) {
			return err
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.view.HoldBack(logview.EntryRef{Author: author, Seq: dec.Seq()}, raw)
	}
	for {
		if err := v.ingestNext(raw, author, head, src); err != nil {
			return err
		}
		head = v.db.Head(author)
		v.mu.Lock()
		next, ok := v.view.TakeAhead(logview.EntryRef{Author: author, Seq: head.Seq + 1})
		v.mu.Unlock()
		if !ok {
			return nil
		}
		raw = next
	}
}

// entrySource is the peer an entry came from.
type entrySource struct {
	dev   keys.DeviceID
	fetch pieces.Fetcher // its pieces, from the same peer
}

func (s *entrySource) pieceFetcher() pieces.Fetcher {
	if s == nil {
		return nil
	}
	return s.fetch
}

// noteFromAuthor records that the author of entry seq sent it itself
// (logview.View.NoteFromAuthor).
func (v *vault) noteFromAuthor(src *entrySource, author keys.DeviceID, seq uint64) {
	if src == nil || src.dev != author {
		return
	}
	v.mu.Lock()
	v.view.NoteFromAuthor(author, seq)
	v.mu.Unlock()
}

// ingestNext validates, stores and folds in the entry that follows head.
func (v *vault) ingestNext(raw []byte, author keys.DeviceID, head entry.Head, src *entrySource) error {
	own := author == v.device.ID()
	var e *entry.Entry
	var err error
	if own {
		e, err = v.verifyOwnNext(raw, head) // logtail.go
	} else {
		e, err = entry.Validate(raw, v.id, head)
	}
	if err != nil {
		return err
	}
	body, err := v.crypt.OpenBody(e)
	if err != nil {
		return fmt.Errorf("opening body of %s/%d: %w", author, e.Seq(), err)
	}
	// A large file's chunk list comes in pieces: fetched from the sender,
	// stored, then expanded, all before the entry is (pieces.go).
	if body, err = v.pieces.Expand(body, src.pieceFetcher()); err != nil {
		return fmt.Errorf("entry %s/%d: %w", author, e.Seq(), err)
	}
	err = v.db.Append(e)
	v.noteHomeWrite("storing a peer's entry", err) // homefull.go
	if err != nil {
		return err
	}
	v.noteFromAuthor(src, author, e.Seq()) // before the growth is signalled
	v.mu.Lock()
	v.addBodyLocked(e, body)
	v.grewLocked()
	v.mu.Unlock()
	v.events.Publish(api.Event{Type: api.EventEntryReceived, Folder: v.cfg.Folder, Peer: author.String(), Count: len(body.Versions)})
	if own {
		v.tail.TookBack(e.Seq())
		v.tailCheck()
	}
	v.kick()
	return nil
}

// addBodyLocked folds an entry's versions into the view and marks their
// paths for reconciliation. v.mu must be held.
func (v *vault) addBodyLocked(e *entry.Entry, body *entry.Body) {
	v.view.Fold(e, body, v.engine.Touch)
}

// peerHolds records what a peer says it holds (its LogStatus). What a
// relay says goes through claims.Checker.RelayHolds, which also catches a
// relay reporting less than before.
func (v *vault) peerHolds(d keys.DeviceID, vec protocol.Vector) {
	// Everything the peer holds of this device's log was sent before this
	// status on its stream, so it is taken back by now (logtail.go).
	v.tailHeard(d, vec[v.device.ID()])
	if !v.isPeer(d) {
		return // not (or no longer) a member or relay: its word counts for nothing
	}
	// A revocation or a relay's removal between the check above and the
	// record below is caught by the check after it; one after that, by
	// memberApplied's Forget.
	defer func() {
		if !v.isPeer(d) {
			v.peers.Forget(d)
		}
	}()
	if v.isRelay(d) {
		v.claims().RelayHolds(d, vec)
		v.events.Publish(api.Event{Type: api.EventPeerStatus, Folder: v.cfg.Folder, Peer: d.String()})
		return
	}
	self := v.device.ID()
	prev, _ := v.peers.Set(d, vec)
	before := prev[self]
	// Remember durably how much of this device's own log the peer holds,
	// so "unsafe" stays truthful across a restart.
	if vec[self] > before {
		u := &vaultdb.Update{}
		u.SetAcked(d, self, vec[self])
		if err := v.db.Commit(u); err != nil {
			v.log.Warn("recording what a peer holds", "peer", d, "err", err)
		}
	}
	v.events.Publish(api.Event{Type: api.EventPeerStatus, Folder: v.cfg.Folder, Peer: d.String()})
}

// unsafeCount is the number of this device's own entries that no other
// device or relay is known to hold.
func (v *vault) unsafeCount() uint64 {
	self := v.device.ID()
	return v.peers.Unsafe(self, v.db.Head(self).Seq)
}

// kick asks the vault's reconcile loop to look at dirty paths.
func (v *vault) kick() {
	select {
	case v.kicked <- struct{}{}:
	default:
		// A kick is already queued; the pass it starts takes every
		// dirty path.
	}
}

// heldVector is, per author, the highest sequence up to which this device
// holds every entry in full: the entry itself and the content of each of
// its versions (inline in the entry, applied in the folder, or superseded
// by a version that is), by the device's held rule
// (engine.DevicePolicy.Held). It is what LogStatus reports, so a peer
// counts its entries as safe here only once their chunks are here too.
func (v *vault) heldVector() protocol.Vector {
	heads := map[keys.DeviceID]uint64{}
	for a, h := range v.db.Heads() {
		heads[a] = h.Seq
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	h := &deviceHolding{v: v}
	return v.view.HeldVector(heads, func(id protocol.VersionID, ver entry.Version) bool {
		h.id, h.ver = id, ver
		return engine.DevicePolicy.Held(h)
	})
}

// deviceHolding answers the held rule's questions about one folded version
// from the vault's index and graph. v.mu must be held while it is asked.
type deviceHolding struct {
	v   *vault
	id  protocol.VersionID
	ver entry.Version
}

func (h *deviceHolding) Inline() bool { return len(h.ver.Chunks) == 0 }

func (h *deviceHolding) Superseded() bool {
	return !slices.ContainsFunc(h.v.view.Graph.Heads(h.ver.Path), func(x protocol.Version) bool { return x.ID == h.id })
}

func (h *deviceHolding) Applied() bool {
	rec, ok := h.v.index.Get(h.ver.Path)
	return ok && rec.Kind == entry.KindFile && rec.Hash == h.ver.Hash
}

// Stored is false: a device keeps a version's content in its folder, not
// as chunks (its version store is history, not what LogStatus promises).
func (*deviceHolding) Stored() bool { return false }

// metaStore is a vault database's metadata as node/peerbook keeps its
// list there.
type metaStore struct{ db *vaultdb.DB }

func (m metaStore) Meta(key string) ([]byte, bool, error) { return m.db.Meta(key) }

func (m metaStore) SetMeta(key string, raw []byte) error {
	u := &vaultdb.Update{}
	u.SetMeta(key, raw)
	return m.db.Commit(u)
}
