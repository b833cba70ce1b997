package record

import (
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Content is what the scanner's hasher hands through a change
// (folder.Change.Extra) for a file: its content as the entry will carry
// it, the bytes inline or the chunk list.
type Content struct {
	Inline []byte
	Chunks []entry.ChunkRef
}

// Vault is what recording a change asks of the vault.
type Vault interface {
	// Index is the folder index's record at path.
	Index(path string) (vaultdb.Record, bool)
	// Supersedes is what a local change of path from cur (if had) to now
	// (Kind 0: deleted) supersedes (engine.Engine.LocalChange), asked
	// only for a change that records a version.
	Supersedes(path string, cur vaultdb.Record, had bool, now vaultdb.Record) []entry.VersionID
	// HeadHolding is a head at path that holds rec's content
	// (engine.HeadHolding), for a path the index does not know.
	HeadHolding(path string, rec vaultdb.Record) (entry.VersionID, bool)
}

// Version makes the version that records change c, and the index record
// to keep for its path (Kind 0: delete the index record). ok is false
// when the change needs no version (only the mtime moved, a deletion of a
// path whose current head is already a deletion, a new path whose
// content a head already holds), unless restate asks for one whatever the
// content (a conflict copy moved back onto the file, MovedCopies).
func Version(v Vault, c folder.Change, restate bool) (ver entry.Version, rec vaultdb.Record, ok bool) {
	cur, hadCur := v.Index(c.Path)
	if c.Type == folder.Deleted {
		supersedes := v.Supersedes(c.Path, cur, hadCur, vaultdb.Record{})
		if len(supersedes) == 0 {
			return entry.Version{}, vaultdb.Record{}, false
		}
		return entry.Version{Path: c.Path, Kind: entry.KindDeletion, Supersedes: supersedes}, vaultdb.Record{}, true
	}
	n := c.New
	rec = vaultdb.Record{
		Size: uint64(n.Size), MTime: n.MTime, Inode: n.Inode, Ctime: n.Ctime,
		Mode: uint32(n.Mode.Perm()), Hash: n.Hash, Target: n.Target,
	}
	ver = entry.Version{Path: c.Path, Mode: uint32(n.Mode.Perm()), MTime: n.MTime}
	switch n.Kind {
	case folder.KindFile:
		rec.Kind, ver.Kind = entry.KindFile, entry.KindFile
		ver.Size, ver.Hash = uint64(n.Size), n.Hash
		if x, ok := c.Extra.(Content); ok {
			ver.Inline, ver.Chunks = x.Inline, x.Chunks
			rec.Chunks = x.Chunks
		}
		if ver.Size == 0 {
			ver.Inline = nil
		}
	case folder.KindDir:
		rec.Kind, ver.Kind = entry.KindDir, entry.KindDir
	case folder.KindSymlink:
		rec.Kind, ver.Kind = entry.KindSymlink, entry.KindSymlink
		ver.Mode, ver.Target, ver.Size = 0, n.Target, uint64(len(n.Target))
	default:
		return entry.Version{}, vaultdb.Record{}, false
	}
	// Unchanged content and mode under a new mtime (a touch, or our own
	// apply being rescanned): remember the new metadata, author nothing.
	if !restate && hadCur && cur.Kind == rec.Kind && cur.Hash == rec.Hash && cur.Mode == rec.Mode && cur.Target == rec.Target {
		rec.Version = cur.Version
		return entry.Version{}, rec, false
	}
	if !hadCur && !restate {
		if id, ok := v.HeadHolding(c.Path, rec); ok {
			rec.Version = id
			return entry.Version{}, rec, false
		}
	}
	ver.Supersedes = v.Supersedes(c.Path, cur, hadCur, rec)
	return ver, rec, true
}
