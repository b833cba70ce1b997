package detsim

import (
	"time"

	"github.com/weftsync/weft/protocol/engine"
)

// racingSave is a user's editor saving a file right after d applied a
// peer's version of it: the editor read the file before the apply, so
// the save is an edit of the content the apply replaced, and it lands
// before the scan sees the apply's bytes. d reconciles; one of the files
// the pass replaced (seeded) is saved on top; the watcher reports it
// within engine.ApplyRaceWindow (seeded), and the scan records it. The
// user knowingly replaced the content they edited, not the peer's, which
// they never saw: engine.RecentApplies must make the save meet the
// peer's version as a concurrent edit (a merge or a conflict copy), or
// the lost-write check fails.
func (s *sim) racingSave(d *device) error {
	if err := s.reconcile(d); err != nil {
		return err
	}
	var candidates []appliedWrite
	for _, a := range d.applied {
		cur, had := d.index[a.path]
		if b, ok := d.disk[a.path]; ok && had && !d.unscanned[a.path] && hashOf(b) == cur.ContentHash {
			candidates = append(candidates, a) // still as the apply left it
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	a := candidates[s.rng.IntN(len(candidates))]
	s.writes++
	b := s.editLines(d, a.before)
	s.replaced[hashOf(a.before)]++
	d.disk[a.path] = b
	d.unscanned[a.path] = true
	delete(d.deletedBy, a.path)
	s.res.RacingSaves++
	h := hashOf(b)
	s.tracef("dev%d save %s %x: an edit of what was there before the apply", d.idx, a.path, h[:4])
	s.now = s.now.Add(time.Duration(s.rng.Int64N(int64(engine.ApplyRaceWindow))))
	return s.watchedScan(d)
}
