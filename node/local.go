package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/keeper"
	"github.com/weftsync/weft/node/record"
	"github.com/weftsync/weft/node/seal"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// chunkHasher is the folder.Hasher the node plugs into the scanner: it
// computes the whole-file BLAKE3 and, for files too large to travel
// inline, cuts the content into chunks and seals each to learn its CID
// (seal.File: in parallel, and only the chunks sealed lists do not hold
// already). The sealed bytes are dropped: a device re-creates them on
// demand from the file, so it keeps no second copy of its data.
type chunkHasher struct {
	keys chunk.Keys
	// ids, if not nil, knows chunks sealed before (node/seal): the scan
	// reuses those of prev and records its own.
	ids  *seal.IDs
	prev []entry.ChunkRef // the chunks of the file's previous content, if known
	// workers bounds the sealing goroutines per file (0: GOMAXPROCS).
	workers int
}

// Hash implements folder.Hasher.
func (h chunkHasher) Hash(ctx context.Context, path string, r io.Reader, size int64) (folder.HashResult, error) {
	var res folder.HashResult
	if size <= entry.InlineLimit {
		b, err := readSmall(r, size)
		if err != nil {
			return res, fmt.Errorf("reading %s: %w", path, err)
		}
		res.Hash = blake3.Sum256(b)
		res.Extra = record.Content{Inline: b}
		return res, nil
	}
	hash, sealed, err := seal.File(ctx, h.keys, r, h.ids.ReuseFor(h.keys.Epoch, h.prev), h.workers)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("reading %s: %w", path, err)
	}
	h.ids.AddSealed(h.keys.Epoch, sealed)
	res.Hash = hash
	res.Extra = record.Content{Chunks: seal.Refs(sealed)}
	return res, nil
}

// readSmall reads a file of at most entry.InlineLimit bytes whose size
// was size when it was listed: into a buffer of that size, so the bytes
// are allocated once (io.ReadAll grows its buffer from 512 bytes, and the
// result was copied again to drop the slack: twice a first scan's bytes).
// A file that shrank is read as far as it goes, one that grew up to
// entry.InlineLimit+1 bytes as io.ReadAll read it; the scanner notices
// either by the size (folder.ErrUnsettled).
func readSmall(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, size)
	n, err := io.ReadFull(r, b)
	b = b[:n]
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return b, nil
	} else if err != nil {
		return nil, err
	}
	var probe [1]byte
	k, err := r.Read(probe[:])
	if k == 0 {
		if err == io.EOF {
			err = nil
		}
		return b, err
	}
	rest, err := io.ReadAll(io.LimitReader(r, entry.InlineLimit-size))
	if err != nil {
		return nil, err
	}
	return append(append(b, probe[0]), rest...), nil
}

// ErrFileTooLarge: a file has more chunks than one version may hold
// (entry.MaxFileChunks, about 256 GiB). It is skipped, not recorded,
// until it shrinks.
var ErrFileTooLarge = errors.New(doctor.MsgFileTooLarge)

// refuseOversized moves changes whose chunk list one version cannot hold
// from res.Changes to res.Skipped, so the rest of the scan is recorded and
// the file is reported instead of failing every scan.
// limit is the most chunks a file may have: entry.MaxFileChunks, or less
// (Config.MaxFileChunks, tests only); 0 means entry.MaxFileChunks.
func refuseOversized(res *folder.Result, limit int) {
	if limit <= 0 || limit > entry.MaxFileChunks {
		limit = entry.MaxFileChunks
	}
	kept := res.Changes[:0]
	for _, c := range res.Changes {
		if x, ok := c.Extra.(record.Content); ok && len(x.Chunks) > limit {
			res.Skipped = append(res.Skipped, folder.Skip{Path: c.Path, Err: fmt.Errorf("%w: %d chunks, at most %d in one version (about %.1f GiB)",
				ErrFileTooLarge, len(x.Chunks), limit, float64(limit)*chunk.AvgSize/(1<<30))})
			continue
		}
		kept = append(kept, c)
	}
	res.Changes = kept
}

// scan rescans the folder (or just paths, when given) and records every
// change as versions in this device's log. It returns what it found.
func (v *vault) scan(ctx context.Context, paths []string) (folder.Result, error) {
	mode := scanSettled
	if paths == nil {
		mode = scanFull
	}
	return v.scanAs(ctx, paths, mode)
}

// scanMode says how the mass-delete guard treats a scan's deletions
// (engine.ScanMode).
type scanMode = engine.ScanMode

const (
	// scanFull: the whole folder; its deletions are judged together.
	scanFull = engine.ScanFull
	// scanSettled: some paths; their deletions are judged now, with the
	// deferred ones.
	scanSettled = engine.ScanSettled
	// scanWatched: paths the watcher reported; deletions wait
	// (deferred) until the next recheck judges them together, so a
	// deletion the watcher splits into several batches is judged whole.
	scanWatched = engine.ScanWatched
)

// scanAs is scan with the guard's mode.
func (v *vault) scanAs(ctx context.Context, paths []string, mode scanMode) (folder.Result, error) {
	return v.scanWatching(ctx, paths, mode, nil)
}

// scanWatching is scanAs calling watchDir before each directory the scan
// lists, for a full scan (folder.Scanner.ScanWatching).
func (v *vault) scanWatching(ctx context.Context, paths []string, mode scanMode, watchDir func(string)) (folder.Result, error) {
	v.scanMu.Lock()
	defer v.scanMu.Unlock()
	v.mu.Lock()
	v.scanning = true
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.scanning = false
		v.mu.Unlock()
	}()
	var res folder.Result
	var confirmed map[string]bool
	if _, err := v.guard(); err != nil {
		v.tail.NoteScanFailed()
		return res, err // the folder is stopped: nothing scanned, nothing recorded
	}
	var err error
	start := time.Now()
	opts := folder.ScanOptions{Paths: paths, Watch: watchDir}
	var oversized []folder.Skip // refused from spilled batches
	if paths == nil && v.spillable() {
		opts.SpillEvery = spillEvery
		opts.Spill = func(batch []folder.Change) error {
			r := folder.Result{Changes: batch}
			refuseOversized(&r, v.maxFileChunks)
			oversized = append(oversized, r.Skipped...) // spills do not overlap
			return v.record(r.Changes, nil, nil)
		}
	}
	res, err = v.scanner.ScanWith(ctx, opts)
	if err == nil {
		refuseOversized(&res, v.maxFileChunks)
		if len(oversized) > 0 {
			res.Spilled -= len(oversized) // refused, not recorded: counted as skipped
			res.Skipped = append(res.Skipped, oversized...)
			slices.SortFunc(res.Skipped, func(a, b folder.Skip) int { return strings.Compare(a.Path, b.Path) })
		}
		res.Changes, confirmed = v.holdLocalDeletions(res.Changes, mode, paths)
	}
	v.report.scan(start, paths, res, err)
	if err != nil {
		v.tail.NoteScanFailed()
		return res, fmt.Errorf("scanning %s: %w", v.cfg.Folder, err)
	}
	v.quarantine(res.Corrupt) // damaged on disk: written again, never recorded
	changes, movedOnto := v.withMovedCopies(res.Changes)
	if err := v.record(changes, confirmed, movedOnto); err != nil {
		return res, err
	}
	if paths == nil {
		v.mu.Lock()
		v.scanned = true
		v.fullScans++
		v.mu.Unlock()
	}
	return res, nil
}

// spillEvery is how many new files a full scan records at a time while it
// still walks (folder.ScanOptions.Spill): a few entries' worth, so a first
// scan of 100,000 small files holds a few MiB of their bytes, not all.
const spillEvery = 4 * record.MaxVersionsPerEntry

// spillable reports whether a full scan may record new files before the
// walk ends: only while the folder index is empty (the first scan of a
// folder, or of one just joined), the case of 100,000 new files at once.
// With anything indexed a new file may be half of something the walk's
// end judges whole: a move that the mass-delete guard pairs with the
// deletion of the same content (and whose share of the folder it judges
// against the index before the scan), a conflict copy moved back onto its
// name (withMovedCopies), or a rename that changes only the case of a
// name on a case-insensitive file system (the scanner's twin check).
// Applies take the scan lock, so nothing is indexed during the scan but
// by the scan itself.
func (v *vault) spillable() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.index.Len() == 0
}

// record turns scanned changes into versions and writes them as entries,
// with the folder index updated in the same commit. Deletions of the
// paths in confirmed carry entry.DeletionConfirmed (massdelete.go); the
// files in restate get a version even when their content is unchanged
// (withMovedCopies).
func (v *vault) record(changes []folder.Change, confirmed, restate map[string]bool) error {
	v.authorMu.Lock()
	defer v.authorMu.Unlock()
	if v.tail.Hold(changePaths(changes)) {
		return nil // recorded by the rescan once authoring opens (logtail.go)
	}
	params := v.pieceParams()
	var b record.Batch
	flush := func() error {
		if b.Empty() {
			return nil
		}
		err := v.author(b.Versions, b.Paths, b.Records)
		b = record.Batch{}
		return err
	}
	for _, c := range changes {
		v.log.Debug("local change", "path", c.Path, "change", c.Type)
		v.report.localChange(c)
		ver, rec, ok := record.Version(recordSide{v}, c, restate[c.Path])
		if ok && ver.Kind == entry.KindDeletion && confirmed[c.Path] {
			ver.Mode = entry.DeletionConfirmed
		}
		if ok {
			if !b.Fits(ver, params) {
				if err := flush(); err != nil {
					return err
				}
			}
			b.AddVersion(ver, params)
		}
		b.AddRecord(c.Path, rec)
	}
	return flush()
}

// withMovedCopies adds to changes the deletion of each conflict copy that
// a user moved back onto its file (record.MovedCopies), and returns the
// files a copy was renamed onto, each to be restated. It holds v.mu while
// it reads the index and no lock while it looks at the disk.
func (v *vault) withMovedCopies(changes []folder.Change) (_ []folder.Change, movedOnto map[string]bool) {
	v.mu.Lock()
	var moves record.Moves
	if v.index.NumConflictCopies() > 0 {
		moves = record.MovedCopies(changes, v.index.ConflictCopies(), v.index.Get)
	}
	v.mu.Unlock()
	return moves.Confirm(changes, func(p string) bool {
		_, err := v.fs.Lstat(p)
		return errors.Is(err, fs.ErrNotExist)
	})
}

// recordSide is the vault as node/record asks it about a change: the
// index, what the change supersedes, a head already holding its content.
type recordSide struct{ v *vault }

func (r recordSide) Index(path string) (vaultdb.Record, bool) {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	return r.v.index.Get(path)
}

// Supersedes is what the change supersedes, asked only once it is a real
// change (a rescan of weft's own apply is not one: applyrace.go).
func (r recordSide) Supersedes(path string, cur vaultdb.Record, had bool, now vaultdb.Record) []entry.VersionID {
	return r.v.supersedesForLocalChange(path, cur, had, now) // applyrace.go
}

func (r recordSide) HeadHolding(path string, rec vaultdb.Record) (entry.VersionID, bool) {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	return engine.HeadHolding(r.v.view.Graph, path, diskOf(rec))
}

// diskOf is the engine's view of a folder index record.
func diskOf(r vaultdb.Record) engine.Disk {
	d := engine.Disk{Version: r.Version, Kind: r.Kind, Mode: r.Mode}
	switch r.Kind {
	case entry.KindFile:
		d.ContentHash = r.Hash
	case entry.KindSymlink:
		d.ContentHash = engine.SymlinkHash(r.Target)
	}
	return d
}

// author writes versions as one entry of this device's log (when there
// are any) and commits the index records of paths in the same batch.
// authorMu must be held.
func (v *vault) author(versions []entry.Version, paths []string, records []vaultdb.Record) error {
	self := v.device.ID()
	var e *entry.Entry
	var body *entry.Body
	if len(versions) > 0 && v.tail.Hold(nil) {
		return errAuthoringHeld // logtail.go
	}
	if len(versions) > 0 {
		engine.AuthorOrder(versions)
		// The device's current name travels in the entry, so conflict
		// copies of these versions are named for it on every device.
		body = &entry.Body{Versions: versions, Author: v.roster.Name(self)}
		listed, pieces := entry.SplitBody(body, v.pieceParams())
		v.mu.Lock()
		clock := v.view.Clock + 1
		v.mu.Unlock()
		var err error
		e, err = entry.New(entry.Config{
			Identity: v.device, Vault: v.id, Prev: v.db.Head(self), Clock: clock,
			Keys: v.crypt.WriteKeys(), Time: v.nextEntryTime(), Rand: rand.Reader,
		}, listed)
		if err != nil {
			return fmt.Errorf("writing entry: %w", err)
		}
		// The pieces are durable before the entry that names them.
		err = v.db.PutPieces(pieces)
		v.noteHomeWrite("storing chunk-list pieces", err) // homefull.go
		if err != nil {
			return fmt.Errorf("writing entry: %w", err)
		}
		// Each version's ID is known only now; point the index records at
		// them.
		byPath := make(map[string]entry.VersionID, len(versions))
		for i, ver := range body.Versions {
			byPath[ver.Path] = e.VersionID(i)
		}
		for i, p := range paths {
			if id, ok := byPath[p]; ok && records[i].Kind != 0 {
				records[i].Version = id
			}
		}
	}
	u := &vaultdb.Update{}
	for i, p := range paths {
		if records[i].Kind == 0 {
			u.DeleteIndex(p)
		} else {
			u.PutIndex(p, records[i])
		}
	}
	var err error
	if e != nil {
		v.advanceOwnAdopted(u, e.Seq()) // logtail.go
		err = v.db.AppendWith(u, e)
	} else {
		err = v.db.Commit(u)
	}
	v.noteHomeWrite("recording local changes", err) // homefull.go
	if err != nil {
		return fmt.Errorf("committing scan: %w", err)
	}
	v.mu.Lock()
	var keeps []keeper.Job
	for i, p := range paths {
		old, had := v.index.Get(p)
		if j, ok := keeper.JobFor(old, had, records[i]); ok {
			keeps = append(keeps, j)
		}
		v.setIndexLocked(p, records[i])
	}
	if e != nil {
		// Folded as a replay is: the inline cache is for received versions
		// about to be applied, and ours are on disk already (a first scan
		// of 100,000 notes filled it with 8 MiB of them, held for good and
		// pushing out anything received meanwhile). A later need reads
		// them back from the log (withInline).
		replaying := v.view.Replaying
		v.view.Replaying = true
		v.addBodyLocked(e, body)
		v.view.Replaying = replaying
		// Our own versions are what the disk already holds: nothing to
		// reconcile unless they raced with a remote version.
		var current []string
		for _, ver := range body.Versions {
			if len(v.view.Graph.Heads(ver.Path)) <= 1 {
				current = append(current, ver.Path)
			}
		}
		v.engine.Post(func(e *engine.Engine) { e.Step(engine.Current{Paths: current}) })
		v.grewLocked()
	}
	v.mu.Unlock()
	for _, j := range keeps {
		v.keep.Enqueue(j)
	}
	if e != nil {
		v.events.Publish(api.Event{Type: api.EventEntryWritten, Folder: v.cfg.Folder, Count: len(versions), Seq: e.Seq()})
		v.kick()
	}
	return nil
}

// setIndexLocked updates the in-memory index and chunk locations for path.
// A record with Kind 0 removes the path. v.mu must be held.
func (v *vault) setIndexLocked(path string, rec vaultdb.Record) {
	old, had := v.index.Set(path, rec)
	v.chunks.Indexed(path, old, had, rec)
}
