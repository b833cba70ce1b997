package relay

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/pack"
)

// Scrub and self-repair. Every chunk a relay stores is re-read and checked
// against its CID on a schedule (store/pack's ScrubStep), so that rot is
// found before a device needs the chunk. A chunk found corrupt, by the
// scrub or by a read while serving it, is quarantined by the chunk store
// and handed to replica.lost, which makes the relay truthful again. (A
// chunk-list piece is stored, scrubbed and quarantined like a chunk: the
// store checks any block by the hash its CID names.)
//
//  1. the chunk is wanted again, if any stored entry references it
//     (directly, or through a stored piece that lists it), so the fetch
//     loop asks the vault's connected devices for it (pull.go);
//  2. every author's held prefix is cut back before the first entry that
//     needs it, and the lowered vector goes to devices on their log
//     streams: the author's `unsafe` count rises, as it must, since the
//     relay no longer holds that entry in full;
//  3. once a device uploads the chunk again (pack.Put stores a fresh copy:
//     the index no longer holds the CID) the prefix advances as before.
//
// The held vector only moves down here, and nothing else lowers it. Its
// consumers handle that: LogStatus is re-sent whenever the vector changes
// (serve.go), retention treats the entries past the prefix as not held,
// which keeps more, never less (retention.go), and a collection that
// planned with the higher prefix is abandoned before it drops anything
// (gc.go, errQuarantined) and runs again.
//
// One loop scrubs every vault, one vault at a time: the budget is the
// relay's, not each vault's (a hundred vaults each at a minute per hour
// would be more than a core and a half). It takes the vault whose last
// pass ended longest ago (a vault never scrubbed first) and steps through
// it to the end of its pass, resting as pack.ScrubPace says for the bytes
// of all vaults together: by default every vault is re-verified once a
// week, within one minute of work per hour.

// scrubStep is how much one background scrub step reads.
const scrubStep = pack.DefaultScrubStep

// scrubLoop runs the background scrub until ctx ends. Run starts it
// unless Config.NoScrub.
func (r *Relay) scrubLoop(ctx context.Context) {
	pace := r.cfg.Scrub
	var cur *replica // the vault whose pass is under way
	for {
		if cur == nil {
			cur = r.nextScrub()
		}
		pause := r.scrubBudgetPer()
		if cur != nil {
			r.scrubMu.Lock()
			t0 := time.Now()
			res, err := cur.chunks.ScrubStep(scrubStep)
			worked := time.Since(t0)
			r.scrubMu.Unlock()
			r.stats.scrubbed(res)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				// An IO error is not rot: nothing was dropped. Try
				// again after a rest; another vault may be fine.
				r.log.Warn("scrub step", "vault", cur.id, "err", err)
				cur = nil
			default:
				total := r.storedBytes()
				pause = pace.Pause(worked, res.Bytes, total)
				if res.PassDone {
					r.log.Debug("scrub pass done", "vault", cur.id)
					if res.Bytes == 0 && total > 0 {
						pause = 0 // an empty vault: go on to the next one
					}
					cur = nil
				}
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (r *Relay) scrubBudgetPer() time.Duration {
	b := r.cfg.Scrub.Budget
	if b == (pack.Budget{}) {
		b = pack.DefaultScrubBudget
	}
	return b.Per
}

// nextScrub picks the vault whose last scrub pass ended longest ago, a
// vault never scrubbed first, ties by vault ID; nil if none is served.
func (r *Relay) nextScrub() *replica {
	var best *replica
	var bestAt time.Time
	for _, rep := range r.replicasSorted() {
		at, ok, err := rep.chunks.LastScrub()
		if err != nil {
			r.log.Warn("reading last scrub time", "vault", rep.id, "err", err)
			continue
		}
		if !ok {
			at = time.Time{}
		}
		if best == nil || at.Before(bestAt) {
			best, bestAt = rep, at
		}
	}
	return best
}

// replicasSorted lists the open replicas by vault ID.
func (r *Relay) replicasSorted() []*replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	out := make([]*replica, 0, len(r.vaults))
	for _, rep := range r.vaults {
		out = append(out, rep)
	}
	slices.SortFunc(out, func(a, b *replica) int { return compareVaults(a.id, b.id) })
	return out
}

func compareVaults(a, b keys.VaultID) int { return slices.Compare(a[:], b[:]) }

// storedBytes is the chunk bytes of every vault: what a pass reads.
func (r *Relay) storedBytes() int64 {
	var n int64
	for _, rep := range r.replicasSorted() {
		n += rep.chunks.Stats().BytesStored
	}
	return n
}

// ScrubReport is what a scrub of every vault found (ScrubNow, ScrubHome).
type ScrubReport struct {
	Vaults  []VaultScrub `json:"vaults"`
	Seconds float64      `json:"seconds"`
}

// VaultScrub is one vault's part of a ScrubReport.
type VaultScrub struct {
	Vault   string   `json:"vault"`
	Chunks  int      `json:"chunks"`            // chunks verified
	Bytes   int64    `json:"bytes"`             // their stored bytes
	Corrupt []string `json:"corrupt,omitempty"` // CIDs found corrupt and quarantined
	Error   string   `json:"error,omitempty"`   // why the pass stopped early
}

// Err is the first vault's error, or nil when every pass finished.
func (rep ScrubReport) Err() error {
	for _, v := range rep.Vaults {
		if v.Error != "" {
			return fmt.Errorf("scrubbing vault %s: %s", v.Vault, v.Error)
		}
	}
	return nil
}

func vaultScrub(id string, res pack.ScrubStepResult, err error) VaultScrub {
	v := VaultScrub{Vault: id, Chunks: res.Checked, Bytes: res.Bytes}
	for _, c := range res.Corrupt {
		v.Corrupt = append(v.Corrupt, c.String())
	}
	if err != nil {
		v.Error = err.Error()
	}
	return v
}

// ScrubNow verifies every chunk of every served vault now, one vault after
// the other and without resting (an operator asked: `weft relay scrub`),
// and returns what it found once done. Corrupt chunks are quarantined and
// fetched again as by the background scrub, which waits meanwhile. It
// stops early when ctx or the relay's run ends.
func (r *Relay) ScrubNow(ctx context.Context) (ScrubReport, error) {
	var out ScrubReport
	if rc := r.context(); rc != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(rc, cancel)
		defer stop()
	}
	start := time.Now()
	r.scrubMu.Lock()
	defer r.scrubMu.Unlock()
	for _, rep := range r.replicasSorted() {
		res, err := rep.chunks.ScrubPass(ctx, 0)
		r.stats.scrubbed(res)
		out.Vaults = append(out.Vaults, vaultScrub(rep.id.String(), res, err))
		if ctx.Err() != nil {
			break
		}
	}
	out.Seconds = time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("scrub: %w", err)
	}
	return out, nil
}

// ScrubHome verifies every chunk of every replica in a stopped relay's
// home (the running relay holds its stores' locks: ask it with ScrubNow
// through its metrics address instead). Corrupt chunks are quarantined;
// the relay, once started, wants them again and fetches them from the
// vaults' devices (its held prefixes are computed at start from what the
// chunk stores hold).
func ScrubHome(ctx context.Context, home string, stores ChunkStores, log *slog.Logger) (ScrubReport, error) {
	var out ScrubReport
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stores == nil {
		stores = PackChunks
	}
	start := time.Now()
	dir := filepath.Join(home, "replicas")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("listing replicas: %w", err)
	}
	for _, e := range ents {
		b, err := hex.DecodeString(e.Name())
		if err != nil || len(b) != len(keys.VaultID{}) || !e.IsDir() {
			continue
		}
		var id keys.VaultID
		copy(id[:], b)
		st, err := stores(id, filepath.Join(dir, e.Name()), log.With("vault", id.String()), nil)
		if err != nil {
			return out, fmt.Errorf("opening chunk store of vault %s (is the relay running? ask it with --metrics): %w", id, err)
		}
		res, err := st.ScrubPass(ctx, 0)
		cerr := st.Close()
		out.Vaults = append(out.Vaults, vaultScrub(id.String(), res, errors.Join(err, cerr)))
		if ctx.Err() != nil {
			break
		}
	}
	out.Seconds = time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("scrub: %w", err)
	}
	return out, nil
}

// errQuarantined aborts a collection planned before a chunk was
// quarantined (gc.go): the plan may count held an entry that now lacks a
// chunk.
var errQuarantined = errors.New("a chunk was quarantined while collecting; collecting again")

// lost is the chunk store's OnQuarantine hook: the chunks cs were found
// corrupt and are no longer stored. It wants again every one a stored
// entry references, directly or through a stored piece, cuts each author's
// held prefix back before the first entry that now lacks a chunk or piece,
// and wakes the log streams (so devices see the lower vector) and the fetch
// loop (so a device uploads the chunks).
//
// Finding the stored pieces that list a lost chunk reads every stored
// piece the entries name (piecesListing), before taking any lock.
//
// It reads every stored entry under r.mu, which holds up ingest and the
// log streams for that long: a quarantine is rare, and a complete scan is
// what makes the new prefix right whatever references the chunk. It takes
// r.gcBar shared, as ingestEntry does, so a collection's drop step never
// works from a prefix this is lowering; the chunk store calls the hook
// with none of its locks held, and collect's drop step never makes the
// store rewrite (which could quarantine and so call back here).
func (r *replica) lost(cs []cid.Cid, by pack.FoundBy) {
	if r.stats != nil {
		r.stats.quarantined(len(cs), by)
	}
	lostSet := make(map[cid.Cid]bool, len(cs))
	chunksLost := false
	for _, c := range cs {
		lostSet[c] = true
		chunksLost = chunksLost || !entry.IsPieceCID(c)
	}
	var listing map[cid.Cid][]cid.Cid // stored pieces that list a lost chunk
	if chunksLost {
		listing = r.piecesListing(lostSet) // reads pieces: before the locks
	}
	defer r.notePending() // after the locks: pieces to read again
	r.gcBar.RLock()
	defer r.gcBar.RUnlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	wanted := 0
	for _, c := range cs {
		delete(r.unavail, c)
		delete(r.pieceDone, c) // a lost piece is wanted again below
	}
	for p, refs := range listing {
		delete(r.pieceDone, p)
		if refs == nil { // could not be read: check it again
			r.unnoted[p] = true
			continue
		}
		for _, c := range refs {
			if lostSet[c] && !r.wanted.has(c) {
				if ok, err := r.chunks.Has(c); err == nil && !ok {
					r.wanted.add(c)
					wanted++
				}
			}
		}
	}
	var cut []string
	for a, h := range r.db.Heads() {
		held, lowered := r.held[a], false
		err := r.db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			for _, hd := range e.Headers() {
				for _, c := range hd.Refs {
					if lostSet[c] && !r.wanted.has(c) {
						if ok, err := r.chunks.Has(c); err == nil && !ok {
							r.wanted.add(c)
							wanted++
						}
					}
				}
			}
			if !lowered && e.Seq() <= held {
				if ok, missing := r.entryHeldLocked(e); !ok {
					r.held[a] = e.Seq() - 1
					r.blockedOn[a] = missing
					lowered = true
				}
			}
			return nil
		})
		if err != nil {
			r.log.Warn("reading stored entries after a quarantine", "author", a, "err", err)
		}
		if lowered {
			cut = append(cut, fmt.Sprintf("%s %d->%d", a.Short(), held, r.held[a]))
		}
	}
	r.lostSeen += uint64(len(cs))
	if len(cut) > 0 {
		r.log.Warn("chunks lost to corruption: held prefixes lowered until the chunks are fetched again",
			"chunks", len(cs), "wanted", wanted, "held", cut)
	}
	r.grewLocked()
	r.kickFetch()
}
