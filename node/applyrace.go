package node

import (
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// The rule for a save that races an apply is protocol/engine's
// (RecentApplies): a local change found within engine.ApplyRaceWindow of
// an apply of a peer's version supersedes what was on disk before that
// apply, so it meets the peer's version as a concurrent edit.

// noteAppliedLocked remembers that an apply replaced old (if had) at path
// with rec (engine.RecentApplies.Applied). v.mu must be held.
func (v *vault) noteAppliedLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) {
	v.eng.Applied(v.view.Graph, path, diskOf(old), had, diskOf(rec), v.n.now())
}

// supersedesForLocalChangeLocked returns what a local change of path to
// now (Kind 0: a deletion) supersedes: what the index's record gives
// (engine.Engine.LocalChange), unless the change races a peer's version applied
// just before (engine.RecentApplies.ForLocalChange). v.mu must be held.
func (v *vault) supersedesForLocalChangeLocked(path string, cur vaultdb.Record, had bool, now vaultdb.Record) []entry.VersionID {
	sup, raced := v.eng.LocalChange(v.view.Graph, path, diskOf(cur), had, diskOf(now), v.n.now())
	if raced {
		v.log.Info("a local change right after applying a peer's version: recorded as concurrent with it, not replacing it", "path", path)
	}
	return sup
}
