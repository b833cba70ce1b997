package node

import (
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// The rule for a save that races an apply is protocol/engine's
// (RecentApplies): a local change found within engine.ApplyRaceWindow of
// an apply of a peer's version supersedes what was on disk before that
// apply, so it meets the peer's version as a concurrent edit.

// noteAppliedLocked remembers that an apply replaced old (if had) at path
// with rec (engine.RecentApplies.Applied). What the content before the
// apply superseded is computed now, from the graph as it is at the apply;
// the engine's loop records it later. v.mu must be held.
func (v *vault) noteAppliedLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) {
	v.postApplied(v.appliedNoteLocked(path, old, had, rec))
}

// appliedNote is one apply, for engine.RecentApplies.Applied, with what
// the content before it superseded.
type appliedNote struct {
	path            string
	before, applied engine.Disk
	had             bool
	now             time.Time
	sup             []protocol.VersionID
}

// appliedNoteLocked is the note of an apply that replaced old (if had) at
// path with rec, computed from the graph as it is now. v.mu must be held.
func (v *vault) appliedNoteLocked(path string, old vaultdb.Record, had bool, rec vaultdb.Record) appliedNote {
	n := appliedNote{path: path, before: diskOf(old), applied: diskOf(rec), had: had, now: v.now()}
	n.sup = v.rules.Supersedes(v.view.Graph, path, n.before, had)
	return n
}

// postApplied hands the engine's loop notes of applies, in one piece of
// work (a batch of small files is one post, not one per file).
func (v *vault) postApplied(notes ...appliedNote) {
	if len(notes) == 0 {
		return
	}
	v.engine.Post(func(e *engine.Engine) {
		for _, n := range notes {
			e.Recent.Applied(n.path, n.before, n.had, n.applied, n.now, func() []protocol.VersionID { return n.sup })
		}
	})
}

// supersedesForLocalChange returns what a local change of path to now
// (Kind 0: a deletion) supersedes: what the index's record gives
// (engine.Engine.LocalChange), unless the change races a peer's version
// applied just before (engine.RecentApplies.ForLocalChange). The engine's
// loop answers it with v.mu held; v.mu must not be held.
func (v *vault) supersedesForLocalChange(path string, cur vaultdb.Record, had bool, now vaultdb.Record) []entry.VersionID {
	var sup []entry.VersionID
	var raced bool
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		sup, raced = e.LocalChange(v.view.Graph, path, diskOf(cur), had, diskOf(now), v.now())
	})
	if raced {
		v.log.Info("a local change right after applying a peer's version: recorded as concurrent with it, not replacing it", "path", path)
	}
	return sup
}
