package record

import (
	"path"
	"strings"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// A conflict copy that a user moved back onto its file. A move is two
// file-system events, and a scan may see the file's new content before the
// copy's removal; recorded in that order, a device that got the first
// entry but not the next, deciding a concurrent edit of the file, found
// the copy's name already holding the content and reused the copy, which
// the removal then deleted: the content was lost (docs/simulation.md,
// finding 10). Recorded in one entry, no device sees one without the
// other.
//
// The file a copy was moved onto gets a version even when its content is
// what the index already held (the loser's own device, which had not
// applied the winner yet, moving its copy back): recorded as only the
// copy's deletion, the move left nothing for the winner to meet, the
// winner then replaced the file, and the content the user had just put
// there was on no disk (docs/simulation.md, finding 13). The version
// restates that content, and as the author's put-back
// (protocol.Graph.PutBack) it meets the winner as a conflict.

// Moves is what the index says of conflict copies that may have been
// moved back onto changed files (MovedCopies), before the disk is asked.
type Moves struct {
	candidates []candidate
	movedOnto  map[string]bool
}

type candidate struct {
	del    folder.Change
	onto   string
	rename bool // the file is the copy renamed there (SameFileMoved)
}

// MovedCopies finds, for each changed file, the conflict copies of it
// (copies: the conflict copies the index holds, index: its records) in
// its directory whose indexed content is the file's new content. A copy
// the scan also found deleted is a move already reported; any other is a
// candidate whose deletion Confirm adds if it is gone from disk. It reads
// only the index, so the caller may hold the index's lock and ask the
// disk after.
func MovedCopies(changes []folder.Change, copies []string, index func(string) (vaultdb.Record, bool)) Moves {
	var m Moves
	if len(copies) == 0 {
		return m // the usual case: no copy to look for
	}
	reported, deleted := map[string]bool{}, map[string]bool{}
	for _, c := range changes {
		reported[c.Path] = true
		deleted[c.Path] = c.Type == folder.Deleted
	}
	for _, c := range changes {
		if c.Type == folder.Deleted || c.New.Kind != folder.KindFile {
			continue
		}
		for _, q := range copies {
			if !IsConflictCopyOf(q, c.Path) {
				continue
			}
			r, ok := index(q)
			if !ok || r.Kind != entry.KindFile || r.Hash != c.New.Hash {
				continue
			}
			rename := SameFileMoved(r, c.New)
			switch {
			case deleted[q]: // the scan saw the copy gone as well
				if rename {
					m.moved(c.Path)
				}
			case !reported[q]:
				reported[q] = true
				m.candidates = append(m.candidates, candidate{folder.Change{Type: folder.Deleted, Path: q}, c.Path, rename})
			}
		}
	}
	return m
}

func (m *Moves) moved(file string) {
	if m.movedOnto == nil {
		m.movedOnto = map[string]bool{}
	}
	m.movedOnto[file] = true
}

// Confirm adds to changes the deletion of each candidate copy that gone
// says is no longer on disk, and returns them with the files a copy was
// renamed onto (each to be restated: Version's restate).
func (m Moves) Confirm(changes []folder.Change, gone func(path string) bool) (_ []folder.Change, movedOnto map[string]bool) {
	for _, c := range m.candidates {
		if gone(c.del.Path) {
			changes = append(changes, c.del)
			if c.rename {
				m.moved(c.onto)
			}
		}
	}
	return changes, m.movedOnto
}

// SameFileMoved reports whether the file now at a path (now) is the copy
// the index recorded (cp) renamed there: a rename keeps the inode (where
// the file system has inode numbers) and the mtime. A copy the user
// deleted while the file was merely saved again, unchanged, is no move:
// taken for one, the restating version made the copy come back (review of
// bb102b5).
func SameFileMoved(cp vaultdb.Record, now folder.Record) bool {
	if cp.Inode != 0 && now.Inode != 0 {
		return cp.Inode == now.Inode && cp.MTime == now.MTime
	}
	return cp.MTime == now.MTime
}

// IsConflictCopyOf reports whether q is named like a conflict copy of p:
// in p's directory, p's stem, then ".conflict-" (protocol.ConflictName).
func IsConflictCopyOf(q, p string) bool {
	stem := strings.TrimSuffix(path.Base(p), path.Ext(p))
	return path.Dir(q) == path.Dir(p) && strings.HasPrefix(path.Base(q), stem+".conflict-")
}
