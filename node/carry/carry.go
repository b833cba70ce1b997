package carry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// ErrDecisionStale reports that the heads or the index record of a path
// changed between deciding it and holding scans to carry the decision
// out; the path is decided again.
var ErrDecisionStale = errors.New("decision outdated by a concurrent scan")

// ErrNotLocal: a chunk is not held here where it was looked for (in the
// merged bytes, keepMerged; in the folder, node's folderChunks).
var ErrNotLocal = errors.New("chunk not held locally")

// Vault is what carrying a decision out needs of the vault.
type Vault interface {
	// Folder is the folder's path, for events.
	Folder() string
	Log() *slog.Logger
	// Applier writes the folder (atomically, checking each file is
	// unchanged since its scan).
	Applier() *folder.Applier
	// KeepBeforeReplace copies the version the index records (cur, if
	// had) into the local version store before the apply replaces it.
	KeepBeforeReplace(cur vaultdb.Record, had bool)
	// KeepSole copies version id into the local version store from
	// envelope, whatever the budget says (keeper.Keeper.KeepSole).
	KeepSole(id entry.VersionID, envelope func(cid.Cid) ([]byte, error))
	// Index is the folder index's record at path.
	Index(path string) (vaultdb.Record, bool)
	// Body is the body of version id as the vault holds it: its inline
	// bytes may have to be read back (WithInline).
	Body(id protocol.VersionID) entry.Version
	// WithInline is ver, the body of id, with its inline bytes.
	WithInline(id protocol.VersionID, ver entry.Version) (entry.Version, error)
	// Content yields a file version's plaintext in order; stop releases
	// its producer.
	Content(ctx context.Context, ver entry.Version) (r io.Reader, stop func())
	// Hash hashes b as the scanner would the file at path: its content
	// hash, and the inline bytes or the chunk list an entry carries.
	Hash(ctx context.Context, path string, b []byte) (hash [32]byte, inline []byte, chunks []entry.ChunkRef, err error)
	// SealLocal seals plain as the local chunk c, if it is c.
	SealLocal(c cid.Cid, plain []byte) (env []byte, ok bool, err error)
	// HoldScans holds off every scan until release is called.
	HoldScans() (release func())
	// Scan scans paths and records what changed.
	Scan(ctx context.Context, paths []string) error
	Now() time.Time
	Publish(api.Event)
	// Wrote counts n bytes of files written for the pass's estimate.
	Wrote(n int64)
	// CommitIndex records that path now holds rec (Kind 0: nothing).
	CommitIndex(path string, rec vaultdb.Record) error
	// RecordResolution authors the entry that records dec's resolution:
	// written at path (records[0]), and a version for each conflict copy
	// not already in the graph (records[1:], in copies' order), committed
	// with the index.
	RecordResolution(path string, dec protocol.Decision, written entry.Version, copies []Copy, records []vaultdb.Record) error
	// Decided runs a test's hook after a decision is made and before
	// scans are held to carry it out.
	Decided(path string)
}

// Copy is one conflict copy of a decision, as it is carried out.
type Copy struct {
	Ver entry.Version // the loser's body, with Path set to the copy's name
	// Existing is set when the name already holds this content in the
	// graph (protocol.ConflictCopy.Exists): the ID of a head there with
	// it. The copy is written to disk if missing, under that ID, and no
	// new version is recorded for it.
	Existing entry.VersionID
}

// Decided is one path's decision as it is carried out: what the engine
// decided, the bodies it writes (inline contents maybe not read back
// yet), and the index record at the path when it was decided.
type Decided struct {
	Path   string
	Dec    protocol.Decision
	Winner entry.Version
	Copies []Copy
	Cur    vaultdb.Record
	Had    bool
	// Still reports whether the heads and index records the decision was
	// made from are still current; it is asked with scans held.
	Still func() bool
}

// Batchable reports whether d may be carried out in a batch of small
// files: it writes its winner only (engine.WritesWinnerOnly), the winner
// is a file whose content its entry carries, and the folder does not hold
// that content yet (else only the index changes, which Out does without
// writing).
func (d *Decided) Batchable() bool {
	id := d.Dec.Winner.ID
	return engine.WritesWinnerOnly(d.Dec) && d.Winner.Kind == entry.KindFile && len(d.Winner.Chunks) == 0 &&
		!(d.Had && (d.Cur.Version == id || d.Cur.Hash == d.Winner.Hash))
}

// Out carries one decision out on its own. A file changed locally since
// its scan is scanned (its edit becomes a head and the path is decided
// again) and the error returned is folder.ErrLocalChange's.
func Out(ctx context.Context, v Vault, d Decided) error {
	path, dec, winner, copies := d.Path, d.Dec, d.Winner, d.Copies
	v.Decided(path)
	var err error
	if winner, err = v.WithInline(dec.Winner.ID, winner); err != nil {
		return err
	}
	for i, c := range dec.Copies {
		p := copies[i].Ver.Path
		if copies[i].Ver, err = v.WithInline(c.Version.ID, copies[i].Ver); err != nil {
			return err
		}
		copies[i].Ver.Path = p
	}

	var merged []byte
	if dec.Outcome == protocol.OutcomeMerge {
		m, clean, err := merge(ctx, v, path, dec.Merge)
		if err != nil && !errors.Is(err, protocol.ErrNotText) && !errors.Is(err, protocol.ErrMergeTooLarge) {
			// Typically the common ancestor's content is no longer held by
			// any reachable device. Fall back to the decision's winner and
			// conflict copies: nothing is lost, and a device that could
			// merge records a resolution that the next decision settles.
			v.Log().Info("merge not possible; keeping both versions", "path", path, "err", err)
		}
		if err == nil && clean {
			merged = m
			copies = nil
		}
	}

	release := v.HoldScans()
	// The decision was made without scans held (the merge above may fetch
	// from peers). A scan in between may have recorded a local edit of
	// the path: the index then describes that edit, so the applier's
	// "unchanged since the last scan" check would pass and the edit would
	// be overwritten by a decision that never saw it. Decide again
	// instead.
	if !d.Still() {
		release()
		return fmt.Errorf("%s: %w", path, ErrDecisionStale)
	}
	rec, copyRecs, err := write(ctx, v, path, dec.Winner.ID, winner, merged, copies)
	if err == nil {
		err = record(v, path, dec, winner, merged, rec, copies, copyRecs)
	}
	release()
	if errors.Is(err, folder.ErrLocalChange) {
		// The local file changed since it was scanned: record that edit
		// first; it becomes a head and the path is decided again.
		if serr := v.Scan(ctx, []string{path}); serr != nil {
			return serr
		}
	}
	return err
}

// write writes the conflict copies, then the winner (or the merged text),
// and returns their index records. A copy that already exists in the
// graph is written only if the disk lacks it (Version leaves equal
// content alone), under the existing version's ID. Scans must be held.
func write(ctx context.Context, v Vault, path string, winnerID entry.VersionID, winner entry.Version, merged []byte, copies []Copy) (vaultdb.Record, []vaultdb.Record, error) {
	var copyRecs []vaultdb.Record
	for _, c := range copies {
		cur, had := v.Index(c.Ver.Path)
		r, err := Version(ctx, v, c.Existing, c.Ver, cur, had)
		if err != nil {
			return vaultdb.Record{}, nil, fmt.Errorf("writing conflict copy %s: %w", c.Ver.Path, err)
		}
		copyRecs = append(copyRecs, r)
		if c.Existing == (entry.VersionID{}) {
			v.Log().Warn("conflict: both versions kept, the other one in a conflict copy (`weft conflicts`, `weft resolve`)", "path", path, "copy", c.Ver.Path)
			v.Publish(api.Event{Type: api.EventConflict, Folder: v.Folder(), Path: c.Ver.Path})
		}
	}
	cur, had := v.Index(path)
	switch {
	case merged != nil:
		rec, err := writeBytes(ctx, v, path, winner, merged, cur, had)
		return rec, copyRecs, err
	case had && cur.Version == winnerID:
		return cur, copyRecs, nil
	default:
		rec, err := Version(ctx, v, winnerID, winner, cur, had)
		return rec, copyRecs, err
	}
}

// record commits what write wrote: the index alone for a single head or
// identical contents, else one entry that supersedes every head (and adds
// one version per conflict copy not already in the graph) together with
// the index. Scans must be held.
func record(v Vault, path string, dec protocol.Decision, winner entry.Version, merged []byte, rec vaultdb.Record, copies []Copy, copyRecs []vaultdb.Record) error {
	if !engine.RecordsResolution(dec) {
		return v.CommitIndex(path, rec)
	}
	written := winner
	if merged != nil {
		written.Size, written.Hash, written.Inline, written.Chunks = rec.Size, rec.Hash, nil, rec.Chunks
		if len(rec.Chunks) == 0 {
			written.Inline = merged
		}
		written.MTime = rec.MTime
	}
	records := append([]vaultdb.Record{rec}, copyRecs...)
	if err := v.RecordResolution(path, dec, written, copies, records); err != nil {
		return err
	}
	if merged != nil {
		keepMerged(v, records[0], merged)
	}
	return nil
}

// Version makes the disk at ver.Path hold ver (version id) and returns the
// index record for it (Kind 0 for a deletion). cur is the index record at
// the path, if had. When the disk already holds the same content, nothing
// is written and only the record's version changes. What it replaces goes
// to the version store first.
func Version(ctx context.Context, v Vault, id entry.VersionID, ver entry.Version, cur vaultdb.Record, had bool) (vaultdb.Record, error) {
	a := v.Applier()
	switch ver.Kind {
	case entry.KindDeletion:
		if !had {
			return vaultdb.Record{}, nil
		}
		v.KeepBeforeReplace(cur, had)
		if err := a.Delete(ctx, ver.Path); err != nil {
			return vaultdb.Record{}, err
		}
		v.Publish(api.Event{Type: api.EventApplied, Folder: v.Folder(), Path: ver.Path, Kind: "deletion"})
		return vaultdb.Record{}, nil
	case entry.KindDir:
		if had && cur.Kind == entry.KindDir {
			cur.Version = id
			return cur, nil
		}
		out, err := a.MakeDir(ctx, ver.Path, fs.FileMode(ver.Mode).Perm()|0o700)
		if err != nil {
			return vaultdb.Record{}, err
		}
		return FromInfo(id, ver, out.Info), nil
	case entry.KindSymlink:
		if had && cur.Kind == entry.KindSymlink && cur.Target == ver.Target {
			cur.Version = id
			return cur, nil
		}
		out, err := a.WriteSymlink(ctx, ver.Path, ver.Target)
		if err != nil {
			return vaultdb.Record{}, err
		}
		return FromInfo(id, ver, out.Info), nil
	case entry.KindFile:
		if had && cur.Kind == entry.KindFile && cur.Hash == ver.Hash && cur.Mode&0o111 == ver.Mode&0o111 {
			cur.Version = id
			cur.Chunks = ver.Chunks
			return cur, nil
		}
		v.KeepBeforeReplace(cur, had)
		content, stop := v.Content(ctx, ver)
		defer stop()
		out, err := a.WriteFile(ctx, folder.FileVersion{
			Path: ver.Path, Size: int64(ver.Size), MTime: ver.MTime, Executable: ver.Mode&0o111 != 0,
		}, content)
		if err != nil {
			return vaultdb.Record{}, err
		}
		v.Wrote(int64(ver.Size))
		v.Publish(api.Event{Type: api.EventApplied, Folder: v.Folder(), Path: ver.Path, Kind: "file", Bytes: int64(ver.Size)})
		return FromInfo(id, ver, out.Info), nil
	}
	return vaultdb.Record{}, fmt.Errorf("version of unknown kind %s", ver.Kind)
}

// FromInfo is the folder index record of version id (ver) as written,
// with the lstat identity the applier read back.
func FromInfo(id entry.VersionID, ver entry.Version, info folder.FileInfo) vaultdb.Record {
	return vaultdb.Record{
		Version: id, Kind: ver.Kind, Size: uint64(info.Size), MTime: info.MTime, Inode: info.Inode,
		Ctime: info.Ctime, Mode: uint32(info.Mode.Perm()), Hash: ver.Hash, Chunks: ver.Chunks, Target: ver.Target,
	}
}

// writeBytes writes merged text at path; the returned record carries the
// merged content's hash and chunk list.
func writeBytes(ctx context.Context, v Vault, path string, like entry.Version, b []byte, cur vaultdb.Record, had bool) (vaultdb.Record, error) {
	hash, inline, chunks, err := v.Hash(ctx, path, b)
	if err != nil {
		return vaultdb.Record{}, err
	}
	ver := like
	ver.Path, ver.Size, ver.Hash = path, uint64(len(b)), hash
	ver.Inline, ver.Chunks = inline, chunks
	if had && cur.Kind == entry.KindFile && cur.Hash == ver.Hash {
		return cur, nil
	}
	v.KeepBeforeReplace(cur, had)
	out, err := v.Applier().WriteFile(ctx, folder.FileVersion{Path: path, Size: int64(len(b)), MTime: v.Now().UnixNano(), Executable: ver.Mode&0o111 != 0}, bytes.NewReader(b))
	if err != nil {
		return vaultdb.Record{}, err
	}
	return FromInfo(entry.VersionID{}, ver, out.Info), nil
}

// keepMerged copies a merge this device just wrote and recorded (rec,
// whose version the record set) into the local version store from the
// merged bytes themselves, before scans are released. Until a peer has
// fetched it, this disk held its only copy, and an editor's save landing
// right after the write replaces that copy while the merge stays a head
// (the save supersedes what was there before the write,
// engine.RecentApplies): the next decision then needs the merge's
// content. Copied later from the folder, as other versions are, it was
// already gone, and both devices retried a conflict copy of it forever
// (TestTokenRace, seed 2 under load; TestSaveRightAfterMergeKeepsTheMerge).
func keepMerged(v Vault, rec vaultdb.Record, merged []byte) {
	if len(rec.Chunks) == 0 {
		return // inline: the entry carries the bytes
	}
	v.KeepSole(rec.Version, func(c cid.Cid) ([]byte, error) {
		var off int64
		for _, ch := range rec.Chunks {
			end := off + int64(ch.Size)
			if ch.CID.Equals(c) && end <= int64(len(merged)) {
				env, ok, err := v.SealLocal(c, merged[off:end])
				if err != nil || ok {
					return env, err
				}
			}
			off = end
		}
		return nil, fmt.Errorf("chunk %s: %w", c, ErrNotLocal)
	})
}

// merge fetches the contents of a merge plan for path and merges them
// with the driver for path's type (protocol.MergeFile).
func merge(ctx context.Context, v Vault, path string, plan *protocol.MergePlan) ([]byte, bool, error) {
	read := func(id protocol.VersionID) ([]byte, error) {
		ver := v.Body(id)
		if ver.Size > protocol.MaxMergeBytes {
			return nil, protocol.ErrMergeTooLarge
		}
		ver, err := v.WithInline(id, ver)
		if err != nil {
			return nil, err
		}
		r, stop := v.Content(ctx, ver)
		defer stop()
		return io.ReadAll(r)
	}
	base, err := read(plan.Base.ID)
	if err != nil {
		return nil, false, err
	}
	sides := make([][]byte, len(plan.Sides))
	for i, s := range plan.Sides {
		if sides[i], err = read(s.ID); err != nil {
			return nil, false, err
		}
	}
	return protocol.MergeFile(path, base, sides)
}
