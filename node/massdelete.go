package node

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// The mass-delete guard (docs/folder.md, "Mass deletions"): a scan that
// would record, or peers' entries that would apply, the deletion of more of
// the folder than the folder's protocol.MassDeletePolicy allows records or
// applies none of those deletions. The folder is then `held` until the
// user accepts them (`weft deletions accept`) or rejects them (`weft
// deletions reject`, which brings the files back). So neither a user's
// slip, nor a broken disk that the folder guard did not catch, nor one
// broken member can empty every device; a hostile member with the vault's
// keys can mark its deletions confirmed (entry.DeletionConfirmed) and is
// slowed, not stopped (docs/security.md).
//
// What is held is derived again after a restart: held local deletions
// were never recorded, so the first scan finds them again; held incoming
// deletions are deletion heads not applied here, which the first
// reconcile judges again. Only the policy is stored.

// metaMassDelete holds the folder's policy (JSON), when the user set one.
const metaMassDelete = "mass-delete-policy"

// massDeleteWindow is how long recorded (or applied) deletions keep
// counting towards the guard: a deletion the watcher reports in several
// batches, or peers' entries that arrive in several reconcile passes, is
// judged as one. It is short: over a minute, a busy small folder's
// ordinary deletions (S1's schedule, a user tidying up) added up to more
// than half of it and were held.
const massDeleteWindow = 5 * time.Second

// deleteGuard is the guard's state in a vault; guarded by v.mu.
type deleteGuard struct {
	policy protocol.MassDeletePolicy
	// local are the paths whose local deletion is held (not recorded);
	// localFiles counts the files among them.
	local      map[string]struct{}
	localFiles int
	localSince time.Time
	// incoming are the paths whose deletion by a peer is held (not
	// applied); inFiles counts the files among them.
	incoming   map[string]struct{}
	inFiles    int
	inSince    time.Time
	allowLocal map[string]struct{} // local deletions the user accepted
	// deferred are deletions the watcher reported, waiting for the next
	// recheck to be judged together (path -> is a file).
	deferred map[string]bool
	// deferredAt is when the last deletion joined deferred: they are
	// judged only once deletionQuiet has passed since, so a deletion still
	// under way (rm -rf of a large tree) is judged whole, not in slices.
	deferredAt time.Time
	// added and arrived are the content hashes of files recorded here and
	// of files arriving from peers within massDeleteWindow: a deletion of
	// that content is the other half of a move, even when the move was
	// reported (or sent) in two parts.
	added, arrived map[[32]byte]seenAt
	allowIn        map[string]struct{} // incoming deletions the user accepted
	// recentLocal and recentIn are the files deleted within
	// massDeleteWindow, oldest first.
	recentLocal, recentIn []deletedAt
}

// deletionQuiet is how long no further deletion must have been reported
// before the deferred ones are judged.
const deletionQuiet = time.Second

// deletedAt is a count of files deleted at a time.
type deletedAt struct {
	at    time.Time
	files int
}

// recentCount prunes marks older than the window and returns the files
// the rest count.
func recentCount(marks *[]deletedAt, now time.Time) int {
	n := 0
	kept := (*marks)[:0]
	for _, m := range *marks {
		if now.Sub(m.at) < massDeleteWindow {
			kept = append(kept, m)
			n += m.files
		}
	}
	*marks = kept
	return n
}

// maxMoveHashes bounds each of the added and arrived sets (about 60
// bytes an entry): a first scan of 100,000 files must not keep 6 MB for a
// move check. A split rename of more files than that may be held; the
// user accepts it.
const maxMoveHashes = 10_000

// seenAt is where and when a content was last recorded or arrived.
type seenAt struct {
	at   time.Time
	path string
}

// pruneHashes drops the hashes older than massDeleteWindow.
func pruneHashes(m map[[32]byte]seenAt, now time.Time) {
	for h, s := range m {
		if now.Sub(s.at) >= massDeleteWindow {
			delete(m, h)
		}
	}
}

// movedElsewhere reports whether content h was seen at a path other than
// p within the window: p's deletion is then one half of a move.
func movedElsewhere(m map[[32]byte]seenAt, h [32]byte, p string) bool {
	s, ok := m[h]
	return ok && s.path != p
}

// loadMassDeletePolicy reads the folder's stored policy (the default when
// none is stored).
func loadMassDeletePolicy(db *vaultdb.DB) (protocol.MassDeletePolicy, error) {
	var p protocol.MassDeletePolicy
	b, ok, err := db.Meta(metaMassDelete)
	if err != nil || !ok {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("reading the mass-delete policy: %w", err)
	}
	return p, p.Validate()
}

// setMassDeletePolicy stores and applies a new policy.
func (v *vault) setMassDeletePolicy(p protocol.MassDeletePolicy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	u := &vaultdb.Update{}
	u.SetMeta(metaMassDelete, b)
	if err := v.db.Commit(u); err != nil {
		return fmt.Errorf("storing the mass-delete policy: %w", err)
	}
	v.mu.Lock()
	v.deletes.policy = p
	v.mu.Unlock()
	v.kick()
	return nil
}

// isFileKind reports whether a record counts as a file for the guard
// (files and symlinks: what a user sees as the folder's content).
func isFileKind(k folder.Kind) bool { return k == folder.KindFile || k == folder.KindSymlink }

// holdLocalDeletions takes out of a scan's changes the deletions the guard
// holds or defers, and returns the rest, to be recorded. A full scan's
// deletions replace the held set; a watched scan's wait in the deferred
// set for the next recheck (guardRecheck), which judges them with every
// deletion deferred meanwhile; a settled scan's are judged at once, with
// the deferred ones. Once a hold exists, every further deletion joins it:
// the user is deciding about the folder, and nothing more should leave it
// meanwhile.
//
// confirmed names the deletions the user accepted (`weft deletions
// accept`): they are recorded with entry.DeletionConfirmed, so other
// devices apply them instead of holding them for their own users.
func (v *vault) holdLocalDeletions(changes []folder.Change, mode scanMode, scanned []string) (kept []folder.Change, confirmed map[string]bool) {
	now := v.n.now()
	v.mu.Lock()
	g := &v.deletes
	// A deletion whose content this scan, or one in the last
	// massDeleteWindow, found at another path is a move, not a loss: it is
	// recorded at once and counts for nothing.
	pruneHashes(g.added, now)
	for _, c := range changes {
		if c.Type != folder.Deleted && c.New.Kind == folder.KindFile && len(g.added) < maxMoveHashes {
			if g.added == nil {
				g.added = map[[32]byte]seenAt{}
			}
			g.added[c.New.Hash] = seenAt{now, c.Path}
		}
	}
	if mode == scanSettled {
		// A deferred path the scan looked at and did not find deleted
		// came back unchanged (moved out and back): no longer deferred.
		gone := map[string]bool{}
		for _, c := range changes {
			if c.Type == folder.Deleted {
				gone[c.Path] = true
			}
		}
		for _, p := range scanned {
			if !gone[p] {
				delete(g.deferred, p)
			}
		}
	}
	var dels []folder.Change
	files := 0
	for _, c := range changes {
		if c.Type == folder.Deleted && c.Old.Kind == folder.KindFile {
			if movedElsewhere(g.added, c.Old.Hash, c.Path) {
				delete(g.deferred, c.Path)
				continue
			}
		}
		if c.Type != folder.Deleted {
			delete(g.local, c.Path) // back on disk, if it was held
			delete(g.deferred, c.Path)
			delete(g.allowLocal, c.Path) // an accepted deletion undone: not accepted for later
			continue
		}
		if _, ok := g.allowLocal[c.Path]; ok {
			delete(g.allowLocal, c.Path) // accepted: recorded now
			if confirmed == nil {
				confirmed = map[string]bool{}
			}
			confirmed[c.Path] = true
			continue
		}
		dels = append(dels, c)
		if isFileKind(c.Old.Kind) {
			files++
		}
	}
	switch mode {
	case scanFull:
		// The scan saw every deletion: it judges them all again.
		g.local, g.deferred, g.allowLocal = nil, nil, nil
	case scanWatched:
		if len(g.local) == 0 && len(dels) > 0 {
			if g.deferred == nil {
				g.deferred = map[string]bool{}
			}
			for _, c := range dels {
				g.deferred[c.Path] = isFileKind(c.Old.Kind)
			}
			g.deferredAt = now
			v.mu.Unlock()
			return withoutPaths(changes, dels), confirmed
		}
	}
	recorded := files // the files this scan would record
	if mode == scanSettled {
		// Deferred deletions not in this scan count with it.
		for _, c := range dels {
			delete(g.deferred, c.Path)
		}
		for _, isFile := range g.deferred {
			if isFile {
				files++
			}
		}
	}
	v.countLocalLocked()
	recent := recentCount(&g.recentLocal, now)
	hold := len(dels) > 0 && (len(g.local) > 0 || g.policy.Exceeds(files+recent, v.counts.files+recent))
	if !hold {
		if recorded > 0 {
			g.recentLocal = append(g.recentLocal, deletedAt{now, recorded})
		}
		wasHeld := !g.localSince.IsZero() && len(g.local) == 0
		if wasHeld {
			g.localSince = time.Time{}
		}
		v.mu.Unlock()
		if wasHeld {
			v.log.Info("held local deletions are gone: the files are back")
		}
		return changes, confirmed
	}
	before := len(g.local)
	if g.local == nil {
		g.local = map[string]struct{}{}
	}
	for _, c := range dels {
		g.local[c.Path] = struct{}{}
	}
	if mode == scanSettled {
		for p := range g.deferred {
			g.local[p] = struct{}{} // judged with this scan: held with it
		}
		g.deferred = nil
	}
	v.countLocalLocked()
	if g.localSince.IsZero() {
		g.localSince = now
	}
	heldFiles, indexFiles := g.localFiles, v.counts.files
	v.mu.Unlock()
	if before == 0 {
		sample := make([]string, 0, 5)
		for _, c := range dels[:min(5, len(dels))] {
			sample = append(sample, c.Path)
		}
		v.log.Warn("holding a mass deletion: nothing deleted is recorded until you decide (`weft deletions`)",
			"files", heldFiles, "of", indexFiles, "paths", sample)
		v.n.events.Publish(api.Event{Type: api.EventDeletionsHeld, Folder: v.cfg.Folder, Kind: "local", Count: heldFiles})
	}
	return withoutPaths(changes, dels), confirmed
}

// withoutPaths returns changes without those in drop (same paths).
func withoutPaths(changes, drop []folder.Change) []folder.Change {
	if len(drop) == 0 {
		return changes
	}
	skip := make(map[string]bool, len(drop))
	for _, c := range drop {
		skip[c.Path] = true
	}
	kept := make([]folder.Change, 0, len(changes)-len(drop))
	for _, c := range changes {
		if !skip[c.Path] || c.Type != folder.Deleted {
			kept = append(kept, c)
		}
	}
	return kept
}

// deferredDeletions returns the paths whose deletion the watcher reported
// and the guard has not judged yet.
func (v *vault) deferredDeletions() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.deletes.deferred) == 0 || v.n.now().Sub(v.deletes.deferredAt) < deletionQuiet {
		return nil // none, or deletions still arriving: judged once they stop
	}
	out := make([]string, 0, len(v.deletes.deferred))
	for p := range v.deletes.deferred {
		out = append(out, p)
	}
	return out
}

// holdIncomingDeletions takes out of a reconcile pass's deletions (paths
// whose winner is a deletion) those the guard holds, and returns the rest,
// to be applied. Only deletions that would remove something here count,
// and a deletion whose content arrives at another path in the same pass
// (arriving: content hashes of the pass's other paths' heads) is a move;
// once a hold exists every further one joins it. v.mu must not be held.
func (v *vault) holdIncomingDeletions(dels []string, arriving map[[32]byte]string) []string {
	now := v.n.now()
	v.mu.Lock()
	g := &v.deletes
	for p := range g.allowIn {
		if _, here := v.index[p]; !here {
			delete(g.allowIn, p) // applied
		}
	}
	// Content arriving now or within the window at other paths: the
	// deletions of it are moves, even when the author's entries carried
	// the deletions first and the new paths later (a rename of more than
	// one entry's worth of files). Held deletions that turn out to be
	// moves are released and applied.
	pruneHashes(g.arrived, now)
	for h, p := range arriving {
		if len(g.arrived) >= maxMoveHashes {
			break
		}
		if g.arrived == nil {
			g.arrived = map[[32]byte]seenAt{}
		}
		g.arrived[h] = seenAt{now, p}
	}
	var released []string
	for p := range g.incoming {
		if rec, ok := v.index[p]; ok && rec.Kind == entry.KindFile {
			if movedElsewhere(g.arrived, rec.Hash, p) {
				delete(g.incoming, p)
				released = append(released, p)
			}
		}
	}
	if len(released) > 0 {
		v.countIncomingLocked()
		if len(g.incoming) == 0 {
			g.incoming, g.inSince = nil, time.Time{}
		}
		slices.Sort(released)
		dels = append(slices.Clone(dels), released...)
	}
	var present []string
	files := 0
	for _, p := range dels {
		if _, ok := g.allowIn[p]; ok {
			continue
		}
		rec, here := v.index[p]
		if !here || v.deletionConfirmedLocked(p) {
			continue
		}
		if rec.Kind == entry.KindFile && movedElsewhere(g.arrived, rec.Hash, p) {
			continue
		}
		present = append(present, p)
		if _, held := g.incoming[p]; !held && isFileRecord(rec) {
			files++
		}
	}
	recent := recentCount(&g.recentIn, now)
	hold := len(present) > 0 && (len(g.incoming) > 0 || g.policy.Exceeds(files+recent, v.counts.files+recent))
	if !hold {
		if files > 0 {
			g.recentIn = append(g.recentIn, deletedAt{now, files})
		}
		v.mu.Unlock()
		return dels
	}
	before := len(g.incoming)
	if g.incoming == nil {
		g.incoming = map[string]struct{}{}
	}
	for _, p := range present {
		g.incoming[p] = struct{}{}
	}
	v.countIncomingLocked()
	if g.inSince.IsZero() {
		g.inSince = now
	}
	heldFiles, indexFiles := g.inFiles, v.counts.files
	v.pending.toApply = max(0, v.pending.toApply-(len(g.incoming)-before))
	kept := slices.DeleteFunc(slices.Clone(dels), func(p string) bool {
		_, held := g.incoming[p]
		return held
	})
	v.mu.Unlock()
	if before == 0 {
		v.log.Warn("holding deletions from peers: nothing is deleted here until you decide (`weft deletions`)",
			"files", heldFiles, "of", indexFiles, "paths", present[:min(5, len(present))])
		v.n.events.Publish(api.Event{Type: api.EventDeletionsHeld, Folder: v.cfg.Folder, Kind: "incoming", Count: heldFiles})
	}
	return kept
}

// deletionConfirmedLocked reports whether every head of path is a
// deletion its author's user confirmed past the mass-delete guard
// (entry.DeletionConfirmed). v.mu must be held.
func (v *vault) deletionConfirmedLocked(path string) bool {
	hs := v.graph.Heads(path)
	for _, h := range hs {
		if h.Kind != protocol.KindDeletion || h.Mode&entry.DeletionConfirmed == 0 {
			return false
		}
	}
	return len(hs) > 0
}

// isFileRecord reports whether an index record counts as a file for the
// guard.
func isFileRecord(r vaultdb.Record) bool {
	return r.Kind == entry.KindFile || r.Kind == entry.KindSymlink
}

// countLocalLocked recounts the files among the held local deletions
// (their records stay in the index). v.mu must be held.
func (v *vault) countLocalLocked() {
	g := &v.deletes
	g.localFiles = 0
	for p := range g.local {
		if isFileRecord(v.index[p]) {
			g.localFiles++
		}
	}
}

// countIncomingLocked recounts the files among the held incoming
// deletions. v.mu must be held.
func (v *vault) countIncomingLocked() {
	g := &v.deletes
	g.inFiles = 0
	for p := range g.incoming {
		if isFileRecord(v.index[p]) {
			g.inFiles++
		}
	}
}

// releaseIncomingLocked drops from the incoming hold the paths among
// dirty whose deletion no longer stands to be applied here: a newer
// version won, or the path is gone here anyway. v.mu must be held.
func (v *vault) releaseIncomingLocked(dirty []string) {
	g := &v.deletes
	if len(g.incoming) == 0 {
		return
	}
	for _, p := range dirty {
		if _, held := g.incoming[p]; !held {
			continue
		}
		if _, here := v.index[p]; here && v.winnerIsDeletionLocked(p) {
			continue
		}
		delete(g.incoming, p)
		delete(g.allowIn, p) // an accepted deletion that lost: not accepted for later
	}
	v.countIncomingLocked()
	if len(g.incoming) == 0 {
		g.incoming, g.inSince = nil, time.Time{}
	}
}

// heldErrors are the errors[] items of held deletions, for status.
func (v *vault) heldErrors() []api.PathMessage {
	v.mu.Lock()
	defer v.mu.Unlock()
	g := &v.deletes
	var out []api.PathMessage
	if len(g.local) > 0 {
		out = append(out, api.PathMessage{Code: api.CodeMassDelete, Reason: fmt.Sprintf(
			"%d files deleted here (%s) are held, not sent to other devices: that is more of the folder than its mass-delete guard allows; `weft deletions accept` records them, `weft deletions reject` brings the files back",
			g.localFiles, listPaths(sortedSet(g.local)))})
	}
	if len(g.incoming) > 0 {
		out = append(out, api.PathMessage{Code: api.CodeMassDelete, Reason: fmt.Sprintf(
			"%d files deleted by another device (%s) are held, not deleted here: that is more of the folder than its mass-delete guard allows; `weft deletions accept` deletes them here, `weft deletions reject` keeps them and sends them back",
			g.inFiles, listPaths(sortedSet(g.incoming)))})
	}
	return out
}

// sortedSet returns a set's members, sorted.
func sortedSet(s map[string]struct{}) []string {
	return slices.Sorted(maps.Keys(s))
}
