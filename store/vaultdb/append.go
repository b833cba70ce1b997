package vaultdb

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Group commit. Append hands its request to the commit loop over an
// unbuffered channel and waits. The loop takes one request, then every
// other caller already blocked on the channel (those that arrived while the
// previous group was syncing), up to maxGroupBytes, and commits them
// together:
//
//  1. check each request's entries against the heads (and against the
//     requests before it in the group); a request that fails is answered
//     with its error and contributes nothing;
//  2. write every new entry to the segment and fsync it;
//  3. write their locations, CIDs, the new heads and every request's Update
//     in one goleveldb batch with Sync set;
//  4. publish the new heads and answer every caller.
//
// The index never points at bytes that are not durable (3 starts after 2
// succeeded). A crash before 2 completes loses only unanswered entries; a
// crash between 2 and 3 leaves durable entries Open indexes again.

// maxGroupBytes bounds the entry bytes one group commit gathers, so one
// fsync does not grow without limit under load. A single request may exceed
// it.
const maxGroupBytes = 8 << 20

// appendReq is one Append, AppendWith or Commit call.
type appendReq struct {
	entries []*entry.Entry
	update  *Update
	size    int
	done    chan error
	err     error // set by the loop
}

// Append is AppendWith without an Update.
func (db *DB) Append(entries ...*entry.Entry) error { return db.AppendWith(nil, entries...) }

// Commit commits u alone: atomically, synced. It is AppendWith(u).
func (db *DB) Commit(u *Update) error { return db.AppendWith(u) }

// AppendWith stores entries and commits u (which may be nil) in one index
// batch, and returns once both are durable. Entries must be of this vault,
// validly signed, and, in the order given, each extend its author's head
// (sequence head.Seq+1, linking to the head, with a greater clock); entries
// of several authors may be mixed.
//
// Outcomes: nil (all stored, u committed; an entry already held, same CID,
// is skipped); an error wrapping entry's sentinel for the first entry that
// is invalid or does not extend its head (entry.ErrSeqGap,
// entry.ErrPrevMismatch, ...); a *ForkError if an entry has a held
// entry's author and sequence number but another CID; ErrBadUpdate; an IO
// error; ErrClosed; ErrBroken. On every error nothing of this call is
// visible. After an IO error the entries may still turn up after a crash
// and reopen (they are valid entries; the caller simply did not hear so).
//
// Concurrent calls share fsyncs (see Stats). entries and u must not be
// changed until AppendWith returns.
func (db *DB) AppendWith(u *Update, entries ...*entry.Entry) error {
	if u != nil && u.err != nil {
		return u.err
	}
	size := 0
	for _, e := range entries {
		if err := db.authentic(e); err != nil {
			return err
		}
		size += len(e.Bytes())
	}
	if len(entries) == 0 && (u == nil || u.Len() == 0) {
		return nil
	}
	r := &appendReq{entries: entries, update: u, size: size, done: make(chan error, 1)}
	select {
	case db.reqs <- r:
	case <-db.quit:
		return ErrClosed
	}
	return <-r.done
}

// authentic checks what Validate checks apart from the chain: encoding,
// vault, signature (entry.Entry.Authentic: the encoding was checked when
// the entry was made, so it is not decoded again; re-decoding every
// appended entry was a fifth of the allocations of a first scan of
// 100,000 small files). It runs in the caller's goroutine, so concurrent
// appenders verify signatures in parallel.
func (db *DB) authentic(e *entry.Entry) error {
	if e == nil {
		return errors.New("appending a nil entry")
	}
	if err := e.Authentic(db.cfg.Vault); err != nil {
		return fmt.Errorf("appending entry %s seq %d: %w", e.Author().Short(), e.Seq(), err)
	}
	return nil
}

// commitLoop runs until Close.
func (db *DB) commitLoop() {
	defer close(db.loopDone)
	for {
		var first *appendReq
		select {
		case first = <-db.reqs:
		case <-db.quit:
			return
		}
		group, size := []*appendReq{first}, first.size
	gather:
		for size < maxGroupBytes {
			select {
			case r := <-db.reqs:
				group = append(group, r)
				size += r.size
			default:
				break gather
			}
		}
		db.commit(group)
		for _, r := range group {
			r.done <- r.err
		}
	}
}

// commit runs steps 1-4 for a group and sets each request's err.
func (db *DB) commit(group []*appendReq) {
	db.mu.RLock()
	broken := db.broken
	db.mu.RUnlock()
	if broken != nil {
		if err := db.heal(); err != nil {
			for _, r := range group {
				r.err = fmt.Errorf("%w: %v (reopening the index: %v)", ErrBroken, broken, err)
			}
			return
		}
	}
	g := &groupState{db: db, heads: map[keys.DeviceID]entry.Head{}, held: map[entryKey]*entry.Entry{}}
	var written []*entry.Entry
	for _, r := range group {
		news, err := g.check(r.entries)
		if err != nil {
			r.err = err
			continue
		}
		written = append(written, news...)
	}
	var locs []loc
	if len(written) > 0 {
		payloads := make([][]byte, len(written))
		for i, e := range written {
			payloads[i] = e.Bytes()
		}
		var err error
		locs, err = db.w.append(payloads)
		db.mu.Lock()
		db.stats.SegmentSyncs = db.w.syncs
		db.mu.Unlock()
		if err != nil {
			failRest(group, err)
			return
		}
	}
	b := new(leveldb.Batch)
	for i, e := range written {
		b.Put(locKey(e.Author(), e.Seq()), locValue(locs[i], e.CID()))
		b.Put(cidKey(e.CID()), cidValue(e.Author(), e.Seq()))
	}
	for a, h := range g.heads {
		b.Put(headKey(a), headValue(h))
	}
	for _, r := range group {
		if r.err == nil && r.update != nil {
			if err := r.update.b.Replay(b); err != nil {
				panic("vaultdb: invariant: replaying an update batch: " + err.Error())
			}
		}
	}
	if b.Len() > 0 {
		err := db.idx.Write(b, syncWrite)
		db.mu.Lock()
		db.stats.IndexSyncs++
		if err != nil {
			// goleveldb refuses every later write once a journal
			// write failed; the next commit reopens it (heal). If
			// entries reached a segment, it owes the logs their keys.
			db.broken = err
			db.unindexed, db.unindexedHeads = new(leveldb.Batch), g.heads
			for i, e := range written {
				db.unindexed.Put(locKey(e.Author(), e.Seq()), locValue(locs[i], e.CID()))
				db.unindexed.Put(cidKey(e.CID()), cidValue(e.Author(), e.Seq()))
			}
			for a, h := range g.heads {
				db.unindexed.Put(headKey(a), headValue(h))
			}
		}
		db.mu.Unlock()
		if err != nil {
			failRest(group, fmt.Errorf("writing index: %w", err))
			return
		}
	}
	db.mu.Lock()
	for a, h := range g.heads {
		db.heads[a] = h
	}
	db.stats.Commits++
	db.stats.Entries += int64(len(written))
	for _, r := range group {
		if r.err == nil {
			db.stats.Appends++
		}
	}
	db.mu.Unlock()
}

// failRest sets err on every request of the group not already failed.
func failRest(group []*appendReq, err error) {
	for _, r := range group {
		if r.err == nil {
			r.err = err
		}
	}
}

// groupState is what step 1 knows: the heads and entries the requests
// accepted so far in this group add to the DB's.
type groupState struct {
	db    *DB
	heads map[keys.DeviceID]entry.Head
	held  map[entryKey]*entry.Entry
}

func (g *groupState) head(a keys.DeviceID) entry.Head {
	if h, ok := g.heads[a]; ok {
		return h
	}
	g.db.mu.RLock()
	defer g.db.mu.RUnlock()
	return g.db.heads[a]
}

// check decides one request: it returns the entries to write (duplicates
// left out) and commits them to g, or returns an error and leaves g as it
// was.
func (g *groupState) check(entries []*entry.Entry) ([]*entry.Entry, error) {
	heads := map[keys.DeviceID]entry.Head{}
	held := map[entryKey]*entry.Entry{}
	var news []*entry.Entry
	for _, e := range entries {
		a := e.Author()
		h, ok := heads[a]
		if !ok {
			h = g.head(a)
		}
		what := fmt.Sprintf("appending entry %s seq %d", a.Short(), e.Seq())
		switch seq := e.Seq(); {
		case seq > h.Seq+1:
			return nil, fmt.Errorf("%s: head is at %d: %w", what, h.Seq, entry.ErrSeqGap)
		case seq <= h.Seq:
			stored, err := g.stored(held, entryKey{a, seq})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if stored.CID().Equals(e.CID()) {
				continue // already held
			}
			proof, err := entry.DetectFork(stored, e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			return nil, &ForkError{Proof: proof}
		case h.Seq > 0 && !e.Prev().Equals(h.CID):
			return nil, fmt.Errorf("%s: links to %s, head is %s: %w", what, e.Prev(), h.CID, entry.ErrPrevMismatch)
		case e.Clock() <= h.Clock:
			return nil, fmt.Errorf("%s: clock %d, head's %d: %w", what, e.Clock(), h.Clock, entry.ErrClockNotIncreasing)
		}
		heads[a] = e.Head()
		held[entryKey{a, e.Seq()}] = e
		news = append(news, e)
	}
	for a, h := range heads {
		g.heads[a] = h
	}
	for k, e := range held {
		g.held[k] = e
	}
	return news, nil
}

// stored finds the held entry k: in this request, this group, or the DB.
func (g *groupState) stored(req map[entryKey]*entry.Entry, k entryKey) (*entry.Entry, error) {
	if e, ok := req[k]; ok {
		return e, nil
	}
	if e, ok := g.held[k]; ok {
		return e, nil
	}
	return g.db.Get(k.author, k.seq)
}

// heal reopens the index after a failed write (broken) and writes what that
// write owed the logs: the keys of entries it had made durable in a
// segment. goleveldb keeps a failed journal write's error and returns it
// from every later write until the DB is reopened, so without this a disk
// that filled up once would stop every Append until the process restarts.
//
// The failed write may have left a torn record at the end of goleveldb's
// journal, which the strict open refuses; heal opens without
// opt.StrictJournal, so goleveldb drops that record: it is the batch whose
// callers got an error, never acknowledged. Everything else in the
// journal was written and synced by this process after Open had read the
// index through. goleveldb replays the journal into a table and deletes
// it at open, so the next strict Open does not meet the torn record.
//
// If the index cannot be opened for writing (the disk is still full), heal
// opens it read-only so reads go on, and the next commit tries again.
//
// heal only runs when no reader holds the index (TryLock): a reader whose
// callback appends would otherwise wait for itself. A busy index makes the
// group fail with ErrBroken and the next commit try again.
func (db *DB) heal() error {
	if !db.idxMu.TryLock() {
		return errors.New("index in use by a reader")
	}
	defer db.idxMu.Unlock()
	if err := db.idx.Close(); err != nil && !errors.Is(err, leveldb.ErrClosed) {
		db.cfg.Logger.Warn("closing broken vault index", "dir", db.cfg.Dir, "err", err)
	}
	path := filepath.Join(db.cfg.Dir, "index")
	o := *indexOptions
	o.Strict &^= opt.StrictJournal
	idx, err := openLevelDB(path, &o)
	if err != nil {
		// Still no room (a writable open starts a new journal): open
		// it read-only, which writes nothing, so that reads go on, and
		// try again at the next commit.
		ro := o
		ro.ReadOnly = true
		if rdb, rerr := openLevelDB(path, &ro); rerr == nil {
			db.idx = rdb
		} else {
			db.cfg.Logger.Warn("reopening vault index read-only", "dir", db.cfg.Dir, "err", rerr)
		}
		return err
	}
	db.idx = idx
	if db.unindexed != nil && db.unindexed.Len() > 0 {
		if err := idx.Write(db.unindexed, syncWrite); err != nil {
			return err
		}
	}
	db.mu.Lock()
	for a, h := range db.unindexedHeads {
		if h.Seq > db.heads[a].Seq {
			db.heads[a] = h
		}
	}
	db.stats.IndexSyncs++
	db.broken, db.unindexed, db.unindexedHeads = nil, nil, nil
	db.mu.Unlock()
	db.cfg.Logger.Warn("vault index reopened after a failed write", "dir", db.cfg.Dir)
	return nil
}
