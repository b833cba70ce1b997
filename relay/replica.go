package relay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/chunkstore"
	"github.com/weftsync/weft/store/vaultdb"
)

// replica is one vault as a relay holds it: the membership log and every
// author's entries (store/vaultdb, the same store devices use, without a
// folder index) and the vault's encrypted chunks (store/pack).
//
// It keeps, per author, the length of the prefix of the log it holds in
// full ("held"): entries whose every version either has all its chunks
// here or was superseded by a version in an entry stored here. That is the
// vector it reports to devices in LogStatus, so a device counts its work
// safe only once the relay could hand all of it to another device.
type replica struct {
	id     keys.VaultID
	dir    string
	db     *vaultdb.DB
	chunks chunkstore.Store
	quota  Quota
	log    *slog.Logger
	stats  *stats // the relay's metrics; nil in tests that open a replica alone

	mu         sync.Mutex
	state      *member.State
	held       map[keys.DeviceID]uint64
	superseded map[entry.VersionID]bool // versions named as superseded by a stored entry
	wanted     wantSet                  // chunks and pieces stored entries need (directly or through a stored piece) and not here
	// blockedOn is, per author, a missing chunk or piece of the first
	// entry past its held prefix (cid.Undef: a piece still to be read,
	// which does not block). Until that chunk arrives (or stops being wanted) the
	// prefix cannot move, so advanceLocked skips the author instead of
	// decoding that entry again after every batch of chunks: for one large
	// file that was quadratic (a fifth of the relay's CPU at 5 GiB).
	blockedOn map[keys.DeviceID]cid.Cid
	// fromAuthor is, per device, the highest entry of its own log that it
	// sent the replica itself in this run (ingestEntryFrom): it holds
	// those, whatever it asked for before (serveLog).
	fromAuthor map[keys.DeviceID]uint64
	unavail    map[cid.Cid]int // fetch rounds in which no connected device had the chunk
	full       bool            // a quota is reached
	// loops are the replica's fetch, GC and peer-relay loops
	// (Relay.startFetchLocked); ctx is theirs and its pulls' and log
	// streams', and cancelLoops ends it all (a dropped replica, which is
	// then gone: no stream or pull reads it any more).
	loops       sync.WaitGroup
	ctx         context.Context
	cancelLoops context.CancelFunc
	gone        atomic.Bool
	// active is when the replica last stored or served something (unix
	// ns; VaultInfo.LastActivity), from its files' times at open.
	active atomic.Int64
	// reserved is the bytes of chunks being stored now (putChunk): counted
	// against the byte quota with what is stored, so that fetchers storing
	// at once cannot each pass the check and overshoot it together.
	reserved uint64
	// lostSeen counts the quarantined chunks lost has accounted for
	// (scrub.go). Below the chunk store's Stats().Quarantined, a
	// quarantine is not yet reflected in held; a collection planned
	// before it is abandoned (gc.go).
	lostSeen uint64
	grown    chan struct{} // closed and replaced when anything a device could want changes
	// devHolds is what each member device last said it holds in full
	// (its LogStatus on the relay's pulls); holdsGen counts its changes
	// (holds.go).
	devHolds  map[keys.DeviceID]map[keys.DeviceID]uint64
	devGen    map[keys.DeviceID]uint64 // holdsGen at each device's last change
	holdsGen  uint64
	fetchKick chan struct{}

	// Chunk-list pieces (pieces.go). pieces is a bounded cache of what
	// pieces list, with its own lock; the maps are under mu.
	pieces    *pieceCache
	pieceDone map[cid.Cid]bool // stored pieces whose every chunk is stored
	unnoted   map[cid.Cid]bool // stored pieces named by stored entries, chunks still to be checked

	// Garbage collection (gc.go). gcBar is held shared while a stored
	// entry's chunks are noted and exclusively while GC drops chunks.
	gcBar   sync.RWMutex
	gcNoted map[cid.Cid]struct{} // under mu: while GC runs, chunks and pieces of entries noted since its scan began
	// gcPieces: under mu, while GC runs, the pieces whose chunks went
	// into gcNoted.
	gcPieces map[cid.Cid]struct{}
	sinceGC  int // under mu: versions superseded since the last GC
	gcKick   chan struct{}
	gcGrace  time.Duration // store/pack's GC grace; 0 means pack.DefaultGCGrace
	// testOnlyBeforeDrop, if set, runs in collect between its scan and
	// its drop step, with no lock held: where an entry noted during a
	// collection lands.
	testOnlyBeforeDrop func()
}

// Quota bounds what a relay stores for one vault. Zero means no limit.
type Quota struct {
	Bytes   uint64 // chunk bytes stored
	Entries uint64 // log entries stored
}

// DefaultQuota is a relay's per-vault quota unless configured otherwise:
// enough for a large notes vault and a photo library on a small VPS.
var DefaultQuota = Quota{Bytes: 20 << 30, Entries: 2_000_000}

// replicaDir is where a vault's replica lives in the relay's home (replicas/): named
// by the vault ID, which the relay knows anyway.
func replicaDir(home string, id keys.VaultID) string {
	return filepath.Join(home, "replicas", hex.EncodeToString(id[:]))
}

// openReplica opens (creating if needed) the replica of vault id. st may
// be nil.
func openReplica(home string, id keys.VaultID, quota Quota, stores ChunkStores, log *slog.Logger, st *stats) (*replica, error) {
	dir := replicaDir(home, id)
	db, rep, err := vaultdb.OpenConfig(vaultdb.Config{Dir: filepath.Join(dir, "log"), Vault: id, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("opening replica of vault %s: %w", id, err)
	}
	if err := rep.Err(); err != nil {
		log.Warn("replica recovered with damage; missing entries are fetched again", "vault", id, "err", err)
	}
	var r *replica
	// onQuarantine is called only once the store is in use, after r is
	// set below.
	chunks, err := stores(id, dir, log.With("vault", id.String()), func(cs []cid.Cid, by chunkstore.FoundBy) { r.lost(cs, by) })
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening chunk store of vault %s: %w", id, err)
	}
	r = &replica{
		id: id, dir: dir, db: db, chunks: chunks, quota: quota, log: log.With("vault", id.String()), stats: st,
		state:      db.MemberState(),
		held:       map[keys.DeviceID]uint64{},
		superseded: map[entry.VersionID]bool{},
		wanted:     newWantSet(),
		blockedOn:  map[keys.DeviceID]cid.Cid{},
		fromAuthor: map[keys.DeviceID]uint64{},
		unavail:    map[cid.Cid]int{},
		pieces:     newPieceCache(pieceCacheRefs),
		pieceDone:  map[cid.Cid]bool{},
		unnoted:    map[cid.Cid]bool{},
		grown:      make(chan struct{}),
		fetchKick:  make(chan struct{}, 1),
		gcKick:     make(chan struct{}, 1),
	}
	r.active.Store(lastWritten(dir))
	if err := r.load(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// load rebuilds the in-memory view from the stored entries: what they
// supersede, the chunks and pieces they need that are not stored, the
// chunks the stored pieces list that are not stored (every stored piece a
// stored entry names is read once, by notePending), and the held prefixes.
func (r *replica) load() error {
	r.mu.Lock()
	for a, h := range r.db.Heads() {
		err := r.db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			r.noteLocked(e)
			return nil
		})
		if err != nil {
			r.mu.Unlock()
			return fmt.Errorf("reading stored entries of %s: %w", a, err)
		}
	}
	r.advanceLocked()
	r.full = r.overQuotaLocked()
	r.mu.Unlock()
	r.notePending()
	return nil
}

func (r *replica) close() {
	r.chunks.Close()
	r.db.Close()
}

// noteLocked records what a stored entry supersedes and which of its
// chunks and pieces are missing, and checks the chunks of the pieces it
// names that are stored (now, or by notePending).
func (r *replica) noteLocked(e *entry.Entry) {
	// A new entry may supersede a blocked version: look again.
	clear(r.blockedOn)
	for _, h := range e.Headers() {
		r.gcNoteLocked(h)
		for _, s := range h.Supersedes {
			r.superseded[s] = true
		}
		for _, c := range h.Refs {
			if entry.IsPieceCID(c) {
				r.notePieceRefLocked(c)
				continue
			}
			if !r.wanted.has(c) {
				if ok, err := r.chunks.Has(c); err == nil && !ok {
					r.wanted.add(c)
				}
			}
		}
	}
}

// entryHeldLocked reports whether every version of e is here in full
// (its chunks, or its pieces and every chunk they list) or superseded by a
// stored entry, by the relay's held rule (engine.RelayPolicy.Held); if
// not, missing is a chunk or piece it lacks, or cid.Undef when a piece is
// still to be read (notePending).
func (r *replica) entryHeldLocked(e *entry.Entry) (held bool, missing cid.Cid) {
	rh := &relayHolding{r: r} // one per entry: an interface value escapes
	for i, h := range e.Headers() {
		rh.id, rh.refs = e.VersionID(i), h.Refs
		if !engine.RelayPolicy.Held(rh) {
			return false, rh.missing
		}
	}
	return true, cid.Undef
}

// relayHolding answers the held rule's questions about one stored version
// from the replica's marks. r.mu must be held while it is asked; Stored
// records what it found missing.
type relayHolding struct {
	r       *replica
	id      entry.VersionID
	refs    []cid.Cid
	missing cid.Cid
}

// Inline is false even for a version with no chunks: Stored answers true
// for it at no cost, and the relay cannot tell an inline body from a
// sealed one it cannot read.
func (*relayHolding) Inline() bool { return false }

func (h *relayHolding) Superseded() bool { return h.r.superseded[h.id] }

// Applied is false: a relay writes no folder.
func (*relayHolding) Applied() bool { return false }

func (h *relayHolding) Stored() bool {
	for _, c := range h.refs {
		if entry.IsPieceCID(c) {
			if ok, m := h.r.pieceHeldLocked(c); !ok {
				h.missing = m
				return false
			}
			continue
		}
		if h.r.wanted.has(c) {
			h.missing = c
			return false
		}
	}
	return true
}

// advanceLocked extends each author's held prefix as far as it goes.
func (r *replica) advanceLocked() bool {
	moved := false
	for a, h := range r.db.Heads() {
		from := r.held[a] + 1
		if from > h.Seq {
			continue
		}
		if c, ok := r.blockedOn[a]; ok && c.Defined() && r.wanted.has(c) {
			continue
		}
		delete(r.blockedOn, a)
		errStop := errors.New("stop")
		err := r.db.Range(a, from, h.Seq, func(e *entry.Entry) error {
			if held, missing := r.entryHeldLocked(e); !held {
				r.blockedOn[a] = missing
				return errStop
			}
			r.held[a] = e.Seq()
			moved = true
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			r.log.Warn("reading stored entries", "author", a, "err", err)
		}
	}
	return moved
}

// grewLocked wakes every log stream waiting on the replica.
func (r *replica) grewLocked() {
	close(r.grown)
	r.grown = make(chan struct{})
}

func (r *replica) growthSignal() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.grown
}

func (r *replica) kickFetch() {
	select {
	case r.fetchKick <- struct{}{}:
	default:
	}
}

// isMember reports whether d may read and write the vault through this
// relay: a current member. Revoked devices are refused.
func (r *replica) isMember(d keys.DeviceID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.IsMember(d)
}

func (r *replica) members() []keys.DeviceID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Members()
}

func (r *replica) relays() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Relays()
}

func (r *replica) records() []member.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Records()
}

// memberSeq is the sequence of the last membership record held
// (member.State.Seq; 0 before genesis).
func (r *replica) memberSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Seq
}

// addMember stores a membership record that extends the log.
func (r *replica) addMember(rec member.Record) error {
	if err := r.db.AppendMember(rec); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = r.db.MemberState()
	r.grewLocked()
	return nil
}

// entryCount is the number of entries stored.
func (r *replica) entryCountLocked() uint64 {
	var n uint64
	for _, h := range r.db.Heads() {
		n += h.Seq
	}
	return n
}

func (r *replica) overQuotaLocked() bool {
	if r.quota.Entries > 0 && r.entryCountLocked() >= r.quota.Entries {
		return true
	}
	if r.quota.Bytes > 0 && uint64(r.chunks.Stats().BytesStored) >= r.quota.Bytes {
		return true
	}
	return false
}

// status is the replica's RelayStatus.
func (r *replica) status() wire.RelayStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return wire.RelayStatus{
		Vault: r.id, Bytes: uint64(max(r.chunks.Stats().BytesStored, 0)), BytesLimit: r.quota.Bytes,
		Entries: r.entryCountLocked(), EntriesLimit: r.quota.Entries, Full: r.full,
	}
}

// ErrQuota means a vault's quota on this relay is reached.
var ErrQuota = errors.New("vault quota reached on this relay")

// ingestEntry verifies and stores one entry pulled from a device: a
// current member's or a revoked device's up to its revocation's upto
// (member.State.CheckAuthor), extending its author's chain (vaultdb checks the
// signature, vault and chain). An entry already held is a no-op.
// fromAuthorSeq is the highest entry of dev's own log dev sent the
// replica itself in this run.
func (r *replica) fromAuthorSeq(dev keys.DeviceID) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fromAuthor[dev]
}

// ingestEntryFrom is ingestEntry for an entry device from sent: when
// from is its author, the replica notes that the author holds it before
// any log stream is told the replica grew, so a stream to the author does
// not push the author's own entry back (serveLog).
func (r *replica) ingestEntryFrom(raw []byte, from keys.DeviceID) error {
	return r.ingest(raw, from)
}

func (r *replica) ingestEntry(raw []byte) error { return r.ingest(raw, keys.DeviceID{}) }

// ingest is ingestEntry, noting from as the author's own sender
// (ingestEntryFrom; the zero ID: nobody).
func (r *replica) ingest(raw []byte, from keys.DeviceID) error {
	e, err := entry.Decode(raw)
	if err != nil {
		return fmt.Errorf("decoding entry: %w", err)
	}
	r.mu.Lock()
	if err := r.state.CheckAuthor(e.Author(), e.Seq()); err != nil { // a non-member, or revoked before this entry
		r.mu.Unlock()
		return fmt.Errorf("storing entry: %w", err)
	}
	if h := r.db.Head(e.Author()); e.Seq() <= h.Seq {
		r.mu.Unlock()
		// Held already, or a fork, which vaultdb reports.
		return r.db.Append(e)
	}
	if r.overQuotaLocked() {
		r.full = true
		r.mu.Unlock()
		return ErrQuota
	}
	r.mu.Unlock()
	if err := r.db.Append(e); err != nil {
		return err
	}
	r.touch()
	r.gcBar.RLock() // GC is not dropping chunks while these are noted
	r.mu.Lock()
	if e.Author() == from {
		r.fromAuthor[from] = max(r.fromAuthor[from], e.Seq())
	}
	r.noteLocked(e)
	r.advanceLocked()
	r.grewLocked()
	r.mu.Unlock()
	r.gcBar.RUnlock()
	r.notePending() // stored pieces it names that were not in the cache
	r.kickFetch()
	return nil
}

var errNotMember = errors.New("not a member of the vault")

// wantList returns up to n chunks and pieces to fetch.
func (r *replica) wantList(n int) []cid.Cid {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.full {
		return nil
	}
	return r.wanted.oldest(n, func(c cid.Cid) bool { return r.unavail[c] > 0 })
}

// putChunk verifies env against c and stores it, if c is wanted. A piece
// must pass entry.DecodePiece (else nothing is stored and the error says
// why); once stored, the chunks it lists that the store lacks are wanted.
// A chunk's CID is checked by the chunk store.
func (r *replica) putChunk(c cid.Cid, env []byte) error {
	var refs []cid.Cid
	if entry.IsPieceCID(c) {
		var err error
		if refs, err = decodePiece(c, env); err != nil {
			return fmt.Errorf("storing piece: %w", err)
		}
	}
	r.mu.Lock()
	if !r.wanted.has(c) {
		r.mu.Unlock()
		return nil
	}
	n := uint64(len(env))
	if r.quota.Bytes > 0 && uint64(r.chunks.Stats().BytesStored)+r.reserved+n > r.quota.Bytes {
		r.full = true
		r.grewLocked()
		r.mu.Unlock()
		return ErrQuota
	}
	r.reserved += n
	r.mu.Unlock()
	// pack.Put checks the CID against the bytes.
	err := r.chunks.Put(c, env)
	if refs != nil {
		r.gcBar.RLock() // GC is not dropping chunks while these are noted
		defer r.gcBar.RUnlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reserved -= n
	if err != nil {
		return fmt.Errorf("storing chunk %s: %w", c, err)
	}
	r.wanted.del(c)
	delete(r.unavail, c)
	r.touch()
	if refs != nil {
		r.pieces.put(c, refs)
		r.notePieceLocked(c, refs)
	}
	return nil
}

// missedChunk records that no device asked in one round had c.
func (r *replica) missedChunk(c cid.Cid) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wanted.has(c) {
		r.unavail[c]++
	}
}

// retryUnavailable makes every chunk no device had eligible again: called
// when a device connects, which may hold them.
func (r *replica) retryUnavailable() {
	r.mu.Lock()
	clear(r.unavail)
	r.mu.Unlock()
	r.kickFetch()
}

// settle advances the held prefix after chunks arrived and wakes readers
// if it moved, reading the pieces it needs to (notePending).
func (r *replica) settle() {
	r.mu.Lock()
	if r.advanceLocked() {
		r.grewLocked()
	}
	r.mu.Unlock()
	r.notePending()
}

// offered is the vector the relay serves entries from: per author, the
// head of the stored log, cut at a revoked author's last valid entry
// (member.State.Upto), as a device's vector is (node/epochs.go,
// acceptedSeq). Entries past it were stored before the revocation reached
// the relay; every device refuses them (member.ErrRevokedEntry) and ends
// the stream, so the relay must not offer them.
//
// It is not what the relay asks with (pullLog sends the stored heads: a
// request names what the relay holds, and a cut head would ask a device
// that has not learned of the revocation yet for the very entries the
// relay then refuses), nor what it reports (heldVector: what a relay
// reports may not go back, node/rollback.go, and the held prefix is
// rebuilt from the stored entries at open).
func (r *replica) offered() protocol.Vector {
	heads := r.db.Heads()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(protocol.Vector, len(heads))
	for a, h := range heads {
		s := h.Seq
		if u, ok := r.state.Upto(a); ok {
			s = min(s, u)
		}
		out[a] = s
	}
	return out
}

// heldVector is the vector reported to devices.
func (r *replica) heldVector() map[keys.DeviceID]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[keys.DeviceID]uint64, len(r.held))
	for a, s := range r.held {
		out[a] = s
	}
	return out
}
