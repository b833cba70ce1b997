package scrub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// Pacing: every file re-verified once per Period, a slice each Tick. A
// slice ends at its share of the folder's bytes or of its files,
// whichever comes first, but never below MinBytes and MinFiles (a small
// folder is re-verified sooner than weekly; the file floor bounds the
// opens per minute of a folder of many small notes).
const (
	Period   = 7 * 24 * time.Hour
	Tick     = time.Minute
	MinBytes = 4 << 20
	MinFiles = 64
	// MinVersionBytes is the floor of a slice of the version store.
	MinVersionBytes = 256 << 10
)

// File is a recorded file the scrub may read.
type File struct {
	Rec     folder.Record   // what was recorded: path, size, times, inode, content hash
	Version entry.VersionID // the version the record holds
}

// Vault is what the scrub needs of one vault on this device.
type Vault interface {
	// Folder is the vault's folder, as the user named it.
	Folder() string
	// Check is nil when the folder may be read now (the folder guard).
	Check() error
	// Slice returns, in path order, the first max (all when max <= 0)
	// recorded files after cursor at or under prefix ("" for all), and
	// whether more were left out.
	Slice(prefix, cursor string, max int) (files []File, more bool)
	// Size is the folder's recorded bytes and files.
	Size() (bytes int64, files int)
	// FS reads the folder.
	FS() folder.FS
	// RecordedNear reports whether this device recorded f within
	// RacyWindow of the file's mtime, or cannot tell: a write right after
	// that scan could have left the metadata unchanged, so a mismatch is
	// an edit weft missed, not rot (git's "racy" entries). Versions
	// written by the applier are never racy.
	RecordedNear(f File) bool
	// Quarantine moves damaged files aside and has the recorded versions
	// written again; it returns the paths it moved.
	Quarantine(found []folder.Change) []string
	// Publish announces an event.
	Publish(api.Event)
	// Versions is the local version store, scrubbed beside the folder.
	Versions() VersionStore
	// Log is the vault's logger.
	Log() *slog.Logger
}

// VersionStore is the local version store's scrub (node/keeper).
type VersionStore interface {
	Available() bool
	StoreBytes() int64
	// Scrub re-reads up to maxBytes (0: all) and returns the bytes read
	// and the damaged chunks found.
	Scrub(ctx context.Context, maxBytes int64) (int64, int, error)
}

// RacyWindow is how close to a file's mtime its recording must have been
// for a later mismatch to be an unseen edit rather than rot: a write in
// the same timestamp tick as the scan that recorded the file moves neither
// mtime nor ctime. Two seconds covers the coarsest clocks weft meets
// (FAT, HFS+, SMB).
const RacyWindow = 2 * time.Second

// errChangedAgain: the file's metadata moved while it was read (the
// scanner's to look at).
var errChangedAgain = errors.New("changed again")

// errRacy: a mismatch the scrub cannot call rot (see Vault.RecordedNear).
var errRacy = errors.New("recorded too close to its last write")

// Pass re-verifies the files under prefix ("" for all) whose metadata
// still matches what was recorded, reading at most maxBytes and maxFiles
// (0: no limit) starting after cursor, and has the damaged ones
// quarantined. It returns where to continue ("" when the pass reached the
// end).
func Pass(ctx context.Context, v Vault, prefix, cursor string, maxBytes int64, maxFiles int) (api.ScrubResult, string, error) {
	start := time.Now()
	res := api.ScrubResult{Folder: v.Folder(), Corrupt: []string{}}
	if err := v.Check(); err != nil {
		return res, cursor, err
	}
	files, more := v.Slice(prefix, cursor, maxFiles)
	next := ""
	var found []folder.Change
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return res, cursor, err
		}
		if maxBytes > 0 && res.Bytes >= maxBytes || maxFiles > 0 && res.Files+res.Skipped >= maxFiles {
			next = cursor
			break
		}
		cursor = f.Rec.Path
		c, n, err := verify(v, f)
		res.Bytes += n
		switch {
		case err != nil: // changed again, racy, or unreadable: the scanner's
			res.Skipped++
		case c != nil:
			found = append(found, *c)
			res.Files++
		default:
			res.Files++
		}
	}
	if next == "" && more {
		next = cursor // the slice ended at its file limit with paths left
	}
	if len(found) > 0 {
		res.Corrupt = append(res.Corrupt, v.Quarantine(found)...)
	}
	res.Seconds = time.Since(start).Seconds()
	v.Publish(api.Event{Type: api.EventScrubbed, Folder: v.Folder(), Count: res.Files, Bytes: res.Bytes})
	return res, next, nil
}

// verify re-hashes one file whose lstat still matches its record. It
// returns the Change describing it when its content is damaged
// (folder.IsRot), and the bytes read; errChangedAgain when the metadata
// moved.
func verify(v Vault, f File) (*folder.Change, int64, error) {
	p, rec, fsys := f.Rec.Path, f.Rec, v.FS()
	info, err := fsys.Lstat(p)
	if err != nil {
		return nil, 0, err
	}
	if !statMatches(info, rec) {
		return nil, 0, errChangedAgain
	}
	file, err := fsys.Open(p)
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	h := chunk.NewHasher()
	n, err := io.Copy(h, io.LimitReader(file, rec.Size+1))
	if errors.Is(err, syscall.EIO) {
		// A file that cannot be read back while its metadata is as
		// recorded sits on a bad sector: damaged, like a wrong hash.
		if after, serr := fsys.Lstat(p); serr == nil && statMatches(after, rec) {
			v.Log().Warn("a file cannot be read back (I/O error): taken for damage", "path", p, "err", err)
			now := folder.Record{Path: p, Kind: folder.KindFile, Size: info.Size, MTime: info.MTime, Inode: info.Inode, Ctime: info.Ctime}
			return &folder.Change{Type: folder.Modified, Path: p, Old: rec, New: now}, n, nil
		}
	}
	if err != nil {
		return nil, n, fmt.Errorf("reading %s: %w", p, err)
	}
	after, err := fsys.Lstat(p)
	if err != nil || !statMatches(after, rec) || n != rec.Size {
		return nil, n, errChangedAgain
	}
	now := folder.Record{Path: p, Kind: folder.KindFile, Size: info.Size, MTime: info.MTime, Inode: info.Inode, Ctime: info.Ctime, Hash: h.Sum256()}
	if !folder.IsRot(rec, true, now) {
		return nil, n, nil
	}
	if v.RecordedNear(f) {
		v.Log().Warn("a file's content differs from what was recorded, but it was recorded within a timestamp tick of its last write: taken for an edit weft missed, not rot; run `weft scan` after editing it again",
			"path", p)
		return nil, n, errRacy
	}
	return &folder.Change{Type: folder.Modified, Path: p, Old: rec, New: now}, n, nil
}

// statMatches reports whether an lstat shows the file as recorded,
// unchanged (size, mtime, inode, ctime).
func statMatches(info folder.FileInfo, rec folder.Record) bool {
	return info.Kind == folder.KindFile && info.Size == rec.Size && info.MTime == rec.MTime && info.Inode == rec.Inode && info.Ctime == rec.Ctime
}

// Loop re-verifies the folder slice by slice until ctx ends: every file
// once per Period, and the version store's share beside it.
func Loop(ctx context.Context, v Vault) {
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	cursor := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		total, files := v.Size()
		share := float64(Tick) / float64(Period)
		res, next, err := Pass(ctx, v, "", cursor,
			max(int64(float64(total)*share)+1, MinBytes), max(int(float64(files)*share)+1, MinFiles))
		if err != nil {
			continue // a stopped folder, or shutting down
		}
		if next == "" && cursor != "" {
			v.Log().Debug("scrub pass finished")
		}
		cursor = next
		if len(res.Corrupt) > 0 {
			v.Log().Warn("scrub found damaged files", "files", res.Corrupt)
		}
		// The version store's share of a week, with a smaller floor than
		// the folder's: it holds copies (a damaged one is fetched again,
		// not lost), and an idle agent should not re-read a small store
		// every few minutes.
		if vs := v.Versions(); vs.Available() {
			if _, _, err := vs.Scrub(ctx, max(int64(float64(vs.StoreBytes())*share)+1, MinVersionBytes)); err != nil && ctx.Err() == nil {
				v.Log().Warn("scrubbing the version store", "err", err)
			}
		}
	}
}

// Now re-verifies every file under prefix ("" for the whole folder, then
// the version store too), unpaced, and waits: what `weft scrub` runs.
func Now(ctx context.Context, v Vault, prefix string) (api.ScrubResult, error) {
	start := time.Now()
	res, _, err := Pass(ctx, v, prefix, "", 0, 0)
	if err != nil {
		return res, fmt.Errorf("scrubbing %s: %w", v.Folder(), err)
	}
	if prefix == "" {
		if res.VersionBytes, res.VersionCorrupt, err = v.Versions().Scrub(ctx, 0); err != nil {
			return res, fmt.Errorf("scrubbing the version store of %s: %w", v.Folder(), err)
		}
		res.Seconds = time.Since(start).Seconds()
	}
	return res, nil
}
