package engine

import (
	"maps"
	"time"

	"github.com/weftsync/weft/protocol"
)

// A save that lands right after a device wrote a peer's version of the
// same file was made from the content before that version: an editor (or a
// script) read the file, the device replaced it, and the editor's
// write-then-rename put its edit of the older content on top. Recorded as
// usual it superseded the peer's version it never saw, and the peer's edit
// was gone everywhere with no conflict copy (issue 14: 1 token of 2,663
// lost when two devices appended to the same 50 files). A local change
// found within ApplyRaceWindow of such an apply supersedes what was on
// disk before the apply instead, so it meets the peer's version as a
// concurrent edit: merged when the text merges cleanly, a conflict copy
// otherwise. A user who really edited the peer's version that fast gets a
// clean merge (their edit contains the peer's) or, for a binary file, a
// conflict copy: a spare copy, never a lost edit. A file the apply created
// is exempt: no editor can have read an older content of it.

// ApplyRaceWindow is how long after an apply a local change of the same
// path is taken for one made from the content before it.
const ApplyRaceWindow = 2 * time.Second

// maxRecentApplies bounds RecentApplies: past it, applies older than the
// window are forgotten.
const maxRecentApplies = 4096

// RecentApplies remembers, per path, the peers' versions applied there in
// the last ApplyRaceWindow. It is not safe for concurrent use: it is the
// Engine's, which one goroutine of the device owns.
type RecentApplies struct {
	m map[string]recentApply
}

// recentApply is what a path held before a peer's version was applied
// there, and when.
type recentApply struct {
	at      time.Time
	applied Disk // what the apply wrote
	before  Disk // what was there before (Kind 0: nothing)
	had     bool
	// supersedes is what a local change made just before the apply would
	// have superseded: before's version and the heads holding its content
	// then. A save from that content supersedes these, not what arrives
	// later: a version of the same content that another device wrote
	// after the apply (a user moving a conflict copy of it back onto the
	// path) was never on this disk, and a save that superseded it, taken
	// for an edit of its content, dropped it unseen (simulation S1 seed 1,
	// docs/simulation.md finding 14).
	supersedes []protocol.VersionID
}

// sameContent reports whether a and b hold the same thing, whatever
// version names it (Disk's hash covers a symlink's target).
func sameContent(a, b Disk) bool { return a.Kind == b.Kind && a.ContentHash == b.ContentHash }

// Applied records that an apply replaced before (when had) at path with
// applied, at now. supersedes is called, only when the apply is
// remembered, for what a local change at path superseded before the apply
// (Rules.Supersedes on the graph of that moment).
//
// Only a change of content counts: an apply that left the bytes as they
// were (a version with the same content, a resolution whose winner is
// what was on disk) cannot have been missed by an editor. It does not end
// the window of an apply before it either: the bytes that apply wrote are
// still there, now under applied's version (a peer's resolution that
// restated them, or its identical resolution outranking this device's),
// and a save landing now may still have been made from what was there
// before them. Forgetting that apply here let such a save supersede the
// peer's content unseen, the token race's remaining loss (node's
// TestSaveAfterApplyAndRestatementKeepsBoth). A deletion forgets it.
func (r *RecentApplies) Applied(path string, before Disk, had bool, applied Disk, now time.Time, supersedes func() []protocol.VersionID) {
	if applied.Kind != 0 && had && (before.Version == applied.Version || sameContent(before, applied)) {
		if a, ok := r.m[path]; ok && a.applied.Version == before.Version && now.Sub(a.at) < ApplyRaceWindow {
			a.applied = applied
			r.m[path] = a
			return
		}
		delete(r.m, path)
		return
	}
	if applied.Kind == 0 {
		delete(r.m, path)
		return
	}
	if r.m == nil {
		r.m = map[string]recentApply{}
	}
	if len(r.m) >= maxRecentApplies {
		for p, a := range r.m {
			if now.Sub(a.at) >= ApplyRaceWindow {
				delete(r.m, p)
			}
		}
	}
	r.m[path] = recentApply{at: now, applied: applied, before: before, had: had, supersedes: supersedes()}
}

// ForLocalChange decides for a local change of path to changed (Kind 0: a
// deletion) found at now, where the index holds cur (when had): when the
// index holds a peer's version applied less than ApplyRaceWindow ago, it
// returns what a change made from the content before that apply would
// have superseded then, and true; otherwise false, and the caller applies
// the usual rule (Rules.Supersedes). Either way the apply is forgotten.
//
// A change that puts back exactly the bytes the apply replaced is not an
// edit made from them: an editor saving the older content it read would
// have changed something, and a save that changed nothing carries nothing
// to keep. It is a deliberate act on what the user sees (a conflict copy
// moved back onto its name, a restore, an undo), and it supersedes the
// applied version. Taken for a stale save, it restated the older content
// concurrently with the apply, Resolve dropped it as outdated, and the
// content the user moved back was gone from every device (simulation S1
// seed 3: a conflict copy renamed onto its path right after an apply). The
// applied version stays in history (and in the version store where it was
// kept), as for any edit that replaces a version.
func (r *RecentApplies) ForLocalChange(path string, cur Disk, had bool, changed Disk, now time.Time) ([]protocol.VersionID, bool) {
	a, ok := r.m[path]
	if !ok {
		return nil, false
	}
	delete(r.m, path)
	if a.had && changed.Kind != 0 && sameContent(changed, a.before) {
		return nil, false
	}
	// A file the apply created had no older content an editor could have
	// read: the change is an edit of what arrived (the first sync of a
	// folder is followed by many), recorded as usual.
	if now.Sub(a.at) >= ApplyRaceWindow || !had || cur.Version != a.applied.Version || !a.had {
		return nil, false
	}
	return a.supersedes, true
}

// Trim forgets the applies older than ApplyRaceWindow at now (they decide
// nothing any more: ForLocalChange and Applied ignore them) and lets go of
// the map when none is left, or of its room when most went: a Go map keeps
// the room of its largest size (4,096 applies after a first sync).
func (r *RecentApplies) Trim(now time.Time) {
	before := len(r.m)
	for p, a := range r.m {
		if now.Sub(a.at) >= ApplyRaceWindow {
			delete(r.m, p)
		}
	}
	r.m = trimmed(r.m, before)
}

// Len is how many applies r remembers.
func (r *RecentApplies) Len() int { return len(r.m) }

// trimmed returns m, or a copy sized for what m holds when m held more than
// twice that before (before entries), or nil when m is empty.
func trimmed[K comparable, V any](m map[K]V, before int) map[K]V {
	switch {
	case len(m) == 0:
		return nil
	case before > 2*len(m):
		c := make(map[K]V, len(m))
		maps.Copy(c, m)
		return c
	}
	return m
}
