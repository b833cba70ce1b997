package node

import (
	"time"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// A save that lands right after weft wrote a peer's version of the same
// file was made from the content before that version: an editor (or a
// script) read the file, weft replaced it, and the editor's write-then-
// rename put its edit of the older content on top. Recorded as usual it
// superseded the peer's version it never saw, and the peer's edit was
// gone everywhere with no conflict copy (issue 14: 1 token of 2,663 lost
// when two devices appended to the same 50 files). A local change found
// within applyRaceWindow of such an apply supersedes what was on disk
// before the apply instead, so it meets the peer's version as a concurrent
// edit: merged when the text merges cleanly, a conflict copy otherwise.
// A user who really edited the peer's version that fast gets a clean merge
// (their edit contains the peer's) or, for a binary file, a conflict copy:
// a spare copy, never a lost edit. A file the apply created is exempt: no
// editor can have read an older content of it.

// applyRaceWindow is how long after an apply a local change of the same
// path is taken for one made from the content before it.
const applyRaceWindow = 2 * time.Second

// appliedRecord is what a path's index said before weft applied a peer's
// version there, and when.
type appliedRecord struct {
	at      time.Time
	applied vaultdb.Record // the record the apply wrote
	before  vaultdb.Record // the record before (Kind 0: nothing there)
	had     bool
	// supersedes is what a local change made just before the apply would
	// have superseded: before's version and the heads holding its content
	// then. A save from that content supersedes these, not what arrives
	// later: a version of the same content that another device wrote
	// after the apply (a user moving a conflict copy of it back onto the
	// path) was never on this disk, and a save that superseded it, taken
	// for an edit of its content, dropped it unseen (simulation S1 seed 1,
	// docs/simulation.md finding 14).
	supersedes []entry.VersionID
}

// noteAppliedLocked remembers that an apply replaced old (if had) at path
// with rec. v.mu must be held.
//
// Only a change of content counts: an apply that left the bytes as they
// were (a version with the same content, a resolution whose winner is
// what was on disk) cannot have been missed by an editor. It does not
// end the window of an apply before it either: the bytes that apply wrote
// are still there, now under rec's version (a peer's resolution that
// restated them, or its identical resolution outranking this device's),
// and a save landing now may still have been made from what was there
// before them. Forgetting that apply here let such a save supersede the
// peer's content unseen, the token race's remaining loss
// (TestSaveAfterApplyAndRestatementKeepsBoth).
func (v *vault) noteAppliedLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) {
	now := v.n.now()
	if rec.Kind != 0 && had && (old.Version == rec.Version || old.Kind == rec.Kind && old.Hash == rec.Hash && old.Target == rec.Target) {
		if a, ok := v.recentApplies[path]; ok && a.applied.Version == old.Version && now.Sub(a.at) < applyRaceWindow {
			a.applied = rec
			v.recentApplies[path] = a
			return
		}
		delete(v.recentApplies, path)
		return
	}
	if rec.Kind == 0 {
		delete(v.recentApplies, path)
		return
	}
	if v.recentApplies == nil {
		v.recentApplies = map[string]appliedRecord{}
	}
	if len(v.recentApplies) >= 4096 {
		for p, a := range v.recentApplies {
			if now.Sub(a.at) >= applyRaceWindow {
				delete(v.recentApplies, p)
			}
		}
	}
	v.recentApplies[path] = appliedRecord{at: now, applied: rec, before: old, had: had, supersedes: v.supersedesLocked(path, old, had)}
}

// supersedesForLocalChangeLocked returns what a local change of path to
// now (Kind 0: a deletion) supersedes: what the index's record gives
// (supersedesLocked), unless the index holds a peer's version applied less
// than applyRaceWindow ago, in which case it is what a change made from
// the content before that apply would have superseded then
// (appliedRecord.supersedes). v.mu must be held.
//
// A change that puts back exactly the bytes the apply replaced is not an
// edit made from them: an editor saving the older content it read would
// have changed something, and a save that changed nothing carries nothing
// to keep. It is a deliberate act on what the user sees (a conflict copy
// moved back onto its name, a restore, an undo), and it supersedes the
// applied version. Taken for a stale save, it restated the older content
// concurrently with the apply, Resolve dropped it as outdated, and the
// content the user moved back was gone from every device (simulation S1
// seed 3: a conflict copy renamed onto its path right after an apply).
// The applied version stays in history (and in the version store where
// it was kept), as for any edit that replaces a version.
func (v *vault) supersedesForLocalChangeLocked(path string, cur vaultdb.Record, had bool, now vaultdb.Record) []entry.VersionID {
	a, ok := v.recentApplies[path]
	if !ok {
		return v.supersedesLocked(path, cur, had)
	}
	delete(v.recentApplies, path)
	if a.had && now.Kind != 0 && now.Kind == a.before.Kind && now.Hash == a.before.Hash && now.Target == a.before.Target {
		return v.supersedesLocked(path, cur, had)
	}
	// A file the apply created had no older content an editor could have
	// read: the change is an edit of what arrived (the first sync of a
	// folder is followed by many), recorded as usual.
	if v.n.now().Sub(a.at) >= applyRaceWindow || !had || cur.Version != a.applied.Version || !a.had {
		return v.supersedesLocked(path, cur, had)
	}
	v.log.Info("a local change right after applying a peer's version: recorded as concurrent with it, not replacing it", "path", path)
	return a.supersedes
}
