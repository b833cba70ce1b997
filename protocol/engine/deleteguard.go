package engine

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/weftsync/weft/protocol"
)

// The mass-delete guard (docs/folder.md, "Mass deletions"): a scan that would record, or a
// reconcile pass that would apply, the deletion of more of the folder than
// its protocol.MassDeletePolicy allows records or applies none of those
// deletions; they are held until the user accepts or rejects them. The
// guard's state lives in a DeleteGuard, one per vault (the Engine's), which
// the device feeds with scans, reconcile passes and the
// user's decisions; the state is not stored (held local deletions were
// never recorded, so the first scan after a restart finds them again;
// held incoming ones are deletion heads not applied, which the first
// reconcile judges again).

// DeleteWindow is how long recorded (or applied) deletions keep counting
// towards the guard: a deletion the watcher reports in several batches,
// or peers' entries that arrive in several reconcile passes, is judged as
// one. It is short: over a minute, a busy small folder's ordinary
// deletions (S1's schedule, a user tidying up) added up to more than half
// of it and were held.
const DeleteWindow = 5 * time.Second

// DeletionQuiet is how long no further deletion must have been reported
// before deferred ones are judged: a deletion still under way (rm -rf of
// a large tree) is judged whole, not in slices.
const DeletionQuiet = time.Second

// maxMoveHashes bounds each of the added and arrived sets (about 60 bytes
// an entry): a first scan of 100,000 files must not keep 6 MB for a move
// check. A split rename of more files than that may be held; the user
// accepts it.
const maxMoveHashes = 10_000

// GuardIndex is the folder index as the guard reads it, at the moment of
// a call.
type GuardIndex interface {
	// Lookup returns what the index records at path.
	Lookup(path string) (Disk, bool)
	// Files is how many files and symlinks the index holds.
	Files() int
	// DeletionConfirmed reports whether every head of path is a deletion
	// its author's user confirmed past the guard (entry.DeletionConfirmed).
	DeletionConfirmed(path string) bool
	// WinnerIsDeletion reports whether path's decided winner is a
	// deletion.
	WinnerIsDeletion(path string) bool
}

// ScanMode says how the guard treats a scan's deletions.
type ScanMode int

const (
	// ScanFull: the whole folder; its deletions are judged together.
	ScanFull ScanMode = iota
	// ScanSettled: some paths; their deletions are judged now, with the
	// deferred ones.
	ScanSettled
	// ScanWatched: paths the watcher reported; deletions wait (deferred)
	// until the next settled scan judges them together, so a deletion
	// the watcher splits into several batches is judged whole.
	ScanWatched
)

// LocalChange is one change a scan found, as the guard sees it.
type LocalChange struct {
	Path    string
	Deleted bool
	// Kind and Hash are the new content, or for a deletion what was
	// deleted (Hash: a regular file's content hash).
	Kind protocol.Kind
	Hash [32]byte
}

// countsAsFile: files and symlinks count towards the policy; directories
// do not.
func countsAsFile(k protocol.Kind) bool { return k == protocol.KindFile || k == protocol.KindSymlink }

// DeleteGuard is one folder's guard state. The zero value guards with the
// default policy and holds nothing. It is not safe for concurrent use: it
// is the Engine's, which one goroutine of the device owns.
type DeleteGuard struct {
	Policy protocol.MassDeletePolicy

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
	allowIn    map[string]struct{} // incoming deletions the user accepted
	// deferred are deletions the watcher reported, waiting for the next
	// settled scan to be judged together (path -> counts as a file);
	// deferredAt is when the last one joined.
	deferred   map[string]bool
	deferredAt time.Time
	// added and arrived are the content hashes of files recorded here and
	// of files arriving from peers within DeleteWindow: a deletion of
	// that content is the other half of a move, even when the move was
	// reported (or sent) in two parts.
	added, arrived map[[32]byte]seenAt
	// recentLocal and recentIn are the files deleted within DeleteWindow,
	// oldest first.
	recentLocal, recentIn []deletedAt
}

// deletedAt is a count of files deleted at a time.
type deletedAt struct {
	at    time.Time
	files int
}

// seenAt is where and when a content was last recorded or arrived.
type seenAt struct {
	at   time.Time
	path string
}

// recentCount prunes marks older than the window and returns the files
// the rest count.
func recentCount(marks *[]deletedAt, now time.Time) int {
	n := 0
	kept := (*marks)[:0]
	for _, m := range *marks {
		if now.Sub(m.at) < DeleteWindow {
			kept = append(kept, m)
			n += m.files
		}
	}
	*marks = kept
	return n
}

// pruneHashes drops the hashes older than DeleteWindow.
func pruneHashes(m map[[32]byte]seenAt, now time.Time) {
	for h, s := range m {
		if now.Sub(s.at) >= DeleteWindow {
			delete(m, h)
		}
	}
}

// Trim forgets the move hashes older than DeleteWindow at now (JudgeLocal
// and JudgeIncoming prune them before they read the sets, so they decide
// nothing any more) and lets go of the sets' room: up to maxMoveHashes
// each (about 1.3 MB after a first sync of 10,000 notes) stayed for good.
func (g *DeleteGuard) Trim(now time.Time) {
	before := len(g.added)
	pruneHashes(g.added, now)
	g.added = trimmed(g.added, before)
	before = len(g.arrived)
	pruneHashes(g.arrived, now)
	g.arrived = trimmed(g.arrived, before)
}

// MoveHashes is how many content hashes the guard keeps for its move
// checks, recorded here and arrived.
func (g *DeleteGuard) MoveHashes() (added, arrived int) { return len(g.added), len(g.arrived) }

// movedElsewhere reports whether content h was seen at a path other than
// p within the window: p's deletion is then one half of a move.
func movedElsewhere(m map[[32]byte]seenAt, h [32]byte, p string) bool {
	s, ok := m[h]
	return ok && s.path != p
}

// LocalVerdict is what the guard decided about a scan's deletions.
type LocalVerdict struct {
	// Withheld are the deletions not to record now (held or deferred).
	Withheld []string
	// Confirmed are deletions the user accepted: recorded with
	// entry.DeletionConfirmed, so other devices apply them instead of
	// holding them for their own users.
	Confirmed map[string]bool
	// Began: this scan started a hold (tell the user); Sample names up
	// to five of its paths, HeldFiles and IndexFiles say how much.
	Began                 bool
	Sample                []string
	HeldFiles, IndexFiles int
	// Ended: a hold ended because every held file came back.
	Ended bool
}

// JudgeLocal decides which of a scan's deletions to withhold. A full
// scan's deletions replace the held set; a watched scan's wait in the
// deferred set for the next settled scan, which judges them with every
// deletion deferred meanwhile; a settled scan's (scanned: the paths it
// looked at) are judged at once, with the deferred ones. Once a hold
// exists, every further deletion joins it: the user is deciding about
// the folder, and nothing more should leave it meanwhile. A deletion whose
// content this scan, or one within DeleteWindow, found at another path is
// a move, not a loss: it is recorded at once and counts for nothing.
func (g *DeleteGuard) JudgeLocal(changes []LocalChange, mode ScanMode, scanned []string, idx GuardIndex, now time.Time) LocalVerdict {
	var out LocalVerdict
	pruneHashes(g.added, now)
	for _, c := range changes {
		if !c.Deleted && c.Kind == protocol.KindFile && len(g.added) < maxMoveHashes {
			if g.added == nil {
				g.added = map[[32]byte]seenAt{}
			}
			g.added[c.Hash] = seenAt{now, c.Path}
		}
	}
	if mode == ScanSettled {
		// A deferred path the scan looked at and did not find deleted
		// came back unchanged (moved out and back): no longer deferred.
		gone := map[string]bool{}
		for _, c := range changes {
			if c.Deleted {
				gone[c.Path] = true
			}
		}
		for _, p := range scanned {
			if !gone[p] {
				delete(g.deferred, p)
			}
		}
	}
	var dels []LocalChange
	files := 0
	for _, c := range changes {
		if c.Deleted && c.Kind == protocol.KindFile && movedElsewhere(g.added, c.Hash, c.Path) {
			delete(g.deferred, c.Path)
			continue
		}
		if !c.Deleted {
			delete(g.local, c.Path) // back on disk, if it was held
			delete(g.deferred, c.Path)
			delete(g.allowLocal, c.Path) // an accepted deletion undone: not accepted for later
			continue
		}
		if _, ok := g.allowLocal[c.Path]; ok {
			delete(g.allowLocal, c.Path) // accepted: recorded now
			if out.Confirmed == nil {
				out.Confirmed = map[string]bool{}
			}
			out.Confirmed[c.Path] = true
			continue
		}
		dels = append(dels, c)
		if countsAsFile(c.Kind) {
			files++
		}
	}
	withheld := func() []string {
		ps := make([]string, len(dels))
		for i, c := range dels {
			ps[i] = c.Path
		}
		return ps
	}
	switch mode {
	case ScanFull:
		// The scan saw every deletion: it judges them all again.
		g.local, g.deferred, g.allowLocal = nil, nil, nil
	case ScanWatched:
		if len(g.local) == 0 && len(dels) > 0 {
			if g.deferred == nil {
				g.deferred = map[string]bool{}
			}
			for _, c := range dels {
				g.deferred[c.Path] = countsAsFile(c.Kind)
			}
			g.deferredAt = now
			out.Withheld = withheld()
			return out
		}
	}
	recorded := files // the files this scan would record
	if mode == ScanSettled {
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
	g.localFiles = countFiles(g.local, idx)
	recent := recentCount(&g.recentLocal, now)
	indexFiles := idx.Files()
	if len(dels) == 0 || (len(g.local) == 0 && !g.Policy.Exceeds(files+recent, indexFiles+recent)) {
		if recorded > 0 {
			g.recentLocal = append(g.recentLocal, deletedAt{now, recorded})
		}
		if !g.localSince.IsZero() && len(g.local) == 0 {
			g.localSince = time.Time{}
			out.Ended = true
		}
		return out
	}
	before := len(g.local)
	if g.local == nil {
		g.local = map[string]struct{}{}
	}
	for _, c := range dels {
		g.local[c.Path] = struct{}{}
	}
	if mode == ScanSettled {
		for p := range g.deferred {
			g.local[p] = struct{}{} // judged with this scan: held with it
		}
		g.deferred = nil
	}
	g.localFiles = countFiles(g.local, idx)
	if g.localSince.IsZero() {
		g.localSince = now
	}
	out.Withheld = withheld()
	if before == 0 {
		out.Began, out.HeldFiles, out.IndexFiles = true, g.localFiles, indexFiles
		for _, c := range dels[:min(5, len(dels))] {
			out.Sample = append(out.Sample, c.Path)
		}
	}
	return out
}

// countFiles counts the files among paths, by what the index records
// (held paths keep their records).
func countFiles(paths map[string]struct{}, idx GuardIndex) int {
	n := 0
	for p := range paths {
		if d, ok := idx.Lookup(p); ok && countsAsFile(d.Kind) {
			n++
		}
	}
	return n
}

// Deferred returns the paths whose deletion the watcher reported and the
// guard has not judged yet, once DeletionQuiet has passed since the last
// one (deletions still arriving are judged once they stop).
func (g *DeleteGuard) Deferred(now time.Time) []string {
	if len(g.deferred) == 0 || now.Sub(g.deferredAt) < DeletionQuiet {
		return nil
	}
	return slices.Sorted(maps.Keys(g.deferred))
}

// IncomingVerdict is what the guard decided about a reconcile pass's
// deletions.
type IncomingVerdict struct {
	// Apply are the deletions to carry out now.
	Apply []string
	// NewlyHeld counts the paths this pass added to the hold (no longer
	// pending to apply).
	NewlyHeld int
	// Began: this pass started a hold (tell the user); Sample names up
	// to five of its paths, HeldFiles and IndexFiles say how much.
	Began                 bool
	Sample                []string
	HeldFiles, IndexFiles int
}

// JudgeIncoming decides which of a reconcile pass's deletions (paths
// whose winner is a deletion) to apply. Only deletions that would remove
// something here count; a deletion whose content arrives at another path
// in this pass or within DeleteWindow (arriving: content hash -> path of
// the pass's other heads) is a move, and held deletions that turn out to
// be moves are released; once a hold exists every further one joins it.
func (g *DeleteGuard) JudgeIncoming(dels []string, arriving map[[32]byte]string, idx GuardIndex, now time.Time) IncomingVerdict {
	for p := range g.allowIn {
		if _, here := idx.Lookup(p); !here {
			delete(g.allowIn, p) // applied
		}
	}
	// Content arriving now or within the window at other paths: the
	// deletions of it are moves, even when the author's entries carried
	// the deletions first and the new paths later (a rename of more than
	// one entry's worth of files).
	pruneHashes(g.arrived, now)
	if g.arrived == nil && len(arriving) > 0 {
		g.arrived = map[[32]byte]seenAt{}
	}
	if len(g.arrived)+len(arriving) <= maxMoveHashes {
		for h, p := range arriving {
			g.arrived[h] = seenAt{now, p}
		}
	} else {
		// Past the cap, which hashes are kept must not depend on map
		// order: every device judges a pass alike (and the simulation
		// replays it), so the smallest hashes are taken.
		for _, h := range slices.SortedFunc(maps.Keys(arriving), func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) }) {
			if len(g.arrived) >= maxMoveHashes {
				break
			}
			g.arrived[h] = seenAt{now, arriving[h]}
		}
	}
	var released []string
	for p := range g.incoming {
		if d, ok := idx.Lookup(p); ok && d.Kind == protocol.KindFile && movedElsewhere(g.arrived, d.ContentHash, p) {
			delete(g.incoming, p)
			released = append(released, p)
		}
	}
	if len(released) > 0 {
		g.inFiles = countFiles(g.incoming, idx)
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
		d, here := idx.Lookup(p)
		if !here || idx.DeletionConfirmed(p) {
			continue
		}
		if d.Kind == protocol.KindFile && movedElsewhere(g.arrived, d.ContentHash, p) {
			continue
		}
		present = append(present, p)
		if _, held := g.incoming[p]; !held && countsAsFile(d.Kind) {
			files++
		}
	}
	recent := recentCount(&g.recentIn, now)
	indexFiles := idx.Files()
	if len(present) == 0 || (len(g.incoming) == 0 && !g.Policy.Exceeds(files+recent, indexFiles+recent)) {
		if files > 0 {
			g.recentIn = append(g.recentIn, deletedAt{now, files})
		}
		return IncomingVerdict{Apply: dels}
	}
	before := len(g.incoming)
	if g.incoming == nil {
		g.incoming = map[string]struct{}{}
	}
	for _, p := range present {
		g.incoming[p] = struct{}{}
	}
	g.inFiles = countFiles(g.incoming, idx)
	if g.inSince.IsZero() {
		g.inSince = now
	}
	out := IncomingVerdict{NewlyHeld: len(g.incoming) - before}
	out.Apply = slices.DeleteFunc(slices.Clone(dels), func(p string) bool {
		_, held := g.incoming[p]
		return held
	})
	if before == 0 {
		out.Began, out.HeldFiles, out.IndexFiles = true, g.inFiles, indexFiles
		out.Sample = present[:min(5, len(present))]
	}
	return out
}

// Release drops from the incoming hold the paths among dirty whose
// deletion no longer stands to be applied here: a newer version won, or
// the path is gone here anyway.
func (g *DeleteGuard) Release(dirty []string, idx GuardIndex) {
	if len(g.incoming) == 0 {
		return
	}
	for _, p := range dirty {
		if _, held := g.incoming[p]; !held {
			continue
		}
		if _, here := idx.Lookup(p); here && idx.WinnerIsDeletion(p) {
			continue
		}
		delete(g.incoming, p)
		delete(g.allowIn, p) // an accepted deletion that lost: not accepted for later
	}
	g.inFiles = countFiles(g.incoming, idx)
	if len(g.incoming) == 0 {
		g.incoming, g.inSince = nil, time.Time{}
	}
}

// Held is one direction of a guard's hold, for listing.
type Held struct {
	Paths []string // sorted
	Files int      // how many of Paths are files or symlinks
	Since time.Time
}

// HeldLocal returns the held local deletions (zero when none).
func (g *DeleteGuard) HeldLocal() Held {
	if len(g.local) == 0 {
		return Held{}
	}
	return Held{slices.Sorted(maps.Keys(g.local)), g.localFiles, g.localSince}
}

// HeldIncoming returns the held incoming deletions (zero when none).
func (g *DeleteGuard) HeldIncoming() Held {
	if len(g.incoming) == 0 {
		return Held{}
	}
	return Held{slices.Sorted(maps.Keys(g.incoming)), g.inFiles, g.inSince}
}

// Holding reports whether any deletion is held.
func (g *DeleteGuard) Holding() bool { return len(g.local) > 0 || len(g.incoming) > 0 }

// Accept is the user's accept: the held local deletions are recorded by
// the next scan of local (with entry.DeletionConfirmed), the held incoming
// ones are applied by the next reconcile of incoming. Both are returned
// sorted.
func (g *DeleteGuard) Accept() (local, incoming []string) {
	local, incoming = g.HeldLocal().Paths, g.HeldIncoming().Paths
	g.allowLocal = g.local
	g.local, g.localFiles, g.localSince = nil, 0, time.Time{}
	if len(incoming) > 0 && g.allowIn == nil {
		g.allowIn = map[string]struct{}{}
	}
	for _, p := range incoming {
		g.allowIn[p] = struct{}{}
	}
	g.incoming, g.inFiles, g.inSince = nil, 0, time.Time{}
	return local, incoming
}

// DropLocal ends the local hold: the user rejected it and the files are
// being written back.
func (g *DeleteGuard) DropLocal() {
	g.local, g.localFiles, g.localSince = nil, 0, time.Time{}
}

// DropIncoming takes paths out of the incoming hold: the user rejected
// their deletion and a new version of each now supersedes it.
func (g *DeleteGuard) DropIncoming(paths []string, idx GuardIndex) {
	for _, p := range paths {
		delete(g.incoming, p)
	}
	g.inFiles = countFiles(g.incoming, idx)
	if len(g.incoming) == 0 {
		g.incoming, g.inSince = nil, time.Time{}
	}
}
