package node

import (
	"slices"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// indexCounts is what status reports of the folder index (files, bytes,
// directories, conflict copies present), kept up to date by
// setIndexLocked as records change, so that a status call costs the
// number of conflict copies, not a walk of every record under v.mu (with
// 100,000 files a walk held the lock for milliseconds per poll). The zero
// value is an empty index. Guarded by v.mu.
type indexCounts struct {
	files, dirs int
	bytes       int64
	conflicts   map[string]struct{} // files named like conflict copies
}

// add counts rec at path in (sign +1) or out (sign -1).
func (c *indexCounts) add(path string, rec vaultdb.Record, sign int) {
	switch rec.Kind {
	case entry.KindFile:
		c.files += sign
		c.bytes += int64(sign) * int64(rec.Size)
		if isConflictCopy(path) {
			if sign > 0 {
				if c.conflicts == nil {
					c.conflicts = map[string]struct{}{}
				}
				c.conflicts[path] = struct{}{}
			} else {
				delete(c.conflicts, path)
			}
		}
	case entry.KindDir:
		c.dirs += sign
	}
}

// conflictList returns the conflict copies present, sorted.
func (c *indexCounts) conflictList() []string {
	if len(c.conflicts) == 0 {
		return nil
	}
	out := make([]string, 0, len(c.conflicts))
	for p := range c.conflicts {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// countIndexLocked moves path's counts from its current record to rec (Kind
// 0: removed). setIndexLocked calls it before it changes v.index, which
// setIndexLocked alone does. v.mu must be held.
func (v *vault) countIndexLocked(path string, rec vaultdb.Record) {
	if old, ok := v.index[path]; ok {
		v.counts.add(path, old, -1)
	}
	if rec.Kind != 0 {
		v.counts.add(path, rec, +1)
	}
}
