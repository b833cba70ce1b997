package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/memindex"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Rot on a device (docs/folder.md, "Rot"): a file whose content no longer
// matches what was recorded while its size, mtime and inode still do was
// damaged on disk, not edited. It is never recorded as a version (the
// scanner reports it apart, folder.Result.Corrupt); it is moved aside into
// .weft/corrupt/ for the user, its index record is dropped, and the
// applier writes the recorded version again, from local chunks, peers or
// the relay. The scrub finds rot that moved no metadata at all (a bad
// sector, bit rot) by re-hashing unchanged files at a slow pace.

// corruptDir is where damaged copies are kept, inside WorkDir (never
// synced).
const corruptDir = folder.WorkDir + "/corrupt"

// Scrub pacing: every file re-verified once per scrubPeriod, a slice each
// scrubTick. A slice ends at its share of the folder's bytes or of its
// files, whichever comes first, but never below scrubMinBytes and
// scrubMinFiles (a small folder is re-verified sooner than weekly; the
// file floor bounds the opens per minute of a folder of many small notes).
const (
	scrubPeriod   = 7 * 24 * time.Hour
	scrubTick     = time.Minute
	scrubMinBytes = 4 << 20
	scrubMinFiles = 64
	// scrubMinVersionBytes is the floor of a slice of the version store.
	scrubMinVersionBytes = 256 << 10
)

// corruptFile is a damaged file being repaired.
type corruptFile struct {
	aside string // where the damaged copy was moved, relative to the folder
	since time.Time
}

// quarantine handles the damaged files a scan or the scrub found: each is
// moved aside and written again from the recorded version. It returns the
// paths it quarantined. A file that changed again since it was read is
// left to the next scan.
func (v *vault) quarantine(found []folder.Change) []string {
	var done []string
	for _, c := range found {
		aside, err := v.moveAside(c)
		if err != nil {
			if !errors.Is(err, errChangedAgain) {
				// Not recorded, not repaired: said in status until it is.
				v.log.Warn("moving a damaged file aside", "path", c.Path, "err", err)
				v.mu.Lock()
				if v.corrupt == nil {
					v.corrupt = map[string]corruptFile{}
				}
				if _, ok := v.corrupt[c.Path]; !ok {
					v.corrupt[c.Path] = corruptFile{aside: "(not moved: " + err.Error() + ")", since: v.n.now()}
				}
				v.mu.Unlock()
			}
			continue
		}
		u := &vaultdb.Update{}
		u.DeleteIndex(c.Path)
		if err := v.db.Commit(u); err != nil {
			v.log.Error("recording a damaged file", "path", c.Path, "err", err)
			continue
		}
		v.mu.Lock()
		v.setIndexLocked(c.Path, vaultdb.Record{})
		v.eng.Touch(c.Path)
		if v.corrupt == nil {
			v.corrupt = map[string]corruptFile{}
		}
		v.corrupt[c.Path] = corruptFile{aside: aside, since: v.n.now()}
		v.mu.Unlock()
		v.log.Warn("damaged file: its content changed without an edit (disk damage?); the damaged copy is kept aside and the recorded version is written again",
			"path", c.Path, "aside", aside)
		v.n.events.Publish(api.Event{Type: api.EventCorrupt, Folder: v.cfg.Folder, Path: c.Path, Kind: "file", Error: "content does not match the recorded version; kept at " + aside})
		done = append(done, c.Path)
	}
	if len(done) > 0 {
		v.kick()
	}
	return done
}

// errChangedAgain: a damaged file changed again before it was moved aside.
var errChangedAgain = errors.New("changed again")

// moveAside renames a damaged file into corruptDir, under its path with
// the time appended, and returns where it went. The file must still be
// what the check read (same size, mtime, inode and ctime).
func (v *vault) moveAside(c folder.Change) (string, error) {
	info, err := v.fs.Lstat(c.Path)
	if err != nil {
		return "", err
	}
	if info.Kind != folder.KindFile || info.Size != c.New.Size || info.MTime != c.New.MTime || info.Inode != c.New.Inode || info.Ctime != c.New.Ctime {
		return "", errChangedAgain
	}
	aside := fmt.Sprintf("%s/%s~%s", corruptDir, c.Path, v.n.now().UTC().Format("20060102T150405.000000000Z"))
	dir := path.Dir(aside)
	parts := strings.Split(dir, "/")
	for i := range parts {
		if err := v.fs.Mkdir(strings.Join(parts[:i+1], "/"), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	if err := v.fs.Rename(c.Path, aside); err != nil {
		return "", fmt.Errorf("moving %s aside: %w", c.Path, err)
	}
	if err := v.fs.SyncDir(dir); err != nil {
		return "", err
	}
	return aside, v.fs.SyncDir(memindex.ParentDir(c.Path))
}

// repairedLocked notes that path was written again: a damaged file it
// replaced is repaired. v.mu must be held.
func (v *vault) repairedLocked(p string) {
	if cf, ok := v.corrupt[p]; ok {
		delete(v.corrupt, p)
		v.log.Info("damaged file repaired", "path", p, "aside", cf.aside)
	}
}

// corruptErrors are the errors[] items of damaged files not repaired yet.
func (v *vault) corruptErrors() []api.PathMessage {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []api.PathMessage
	for _, p := range slices.Sorted(maps.Keys(v.corrupt)) {
		out = append(out, api.PathMessage{Code: api.CodeCorrupt, Path: p, Reason: fmt.Sprintf(
			"the file's content changed without an edit (damage on the disk): the damaged copy is kept at %s; the recorded version is being written again from this device's other files, peers or the relay", v.corrupt[p].aside)})
	}
	return out
}

// scrubPass re-verifies the files under prefix ("" for all) whose
// metadata still matches the index, reading at most maxBytes and maxFiles
// (0: no limit) starting after cursor, and quarantines the damaged ones.
// It returns where to continue ("" when the pass reached the end).
func (v *vault) scrubPass(ctx context.Context, prefix, cursor string, maxBytes int64, maxFiles int) (api.ScrubResult, string, error) {
	start := time.Now()
	res := api.ScrubResult{Folder: v.cfg.Folder, Corrupt: []string{}}
	if _, err := v.guard(); err != nil {
		return res, cursor, err
	}
	type item struct {
		path string
		rec  vaultdb.Record
	}
	// The slice's files are the first maxFiles paths after cursor: picked
	// with a bounded heap, not by sorting the whole index, which a
	// background slice each minute did for a handful of files (most of an
	// idle agent's CPU and garbage at 10,000 files; docs/benchmarks.md).
	v.mu.Lock()
	paths, more := v.index.FirstAfter(cursor, maxFiles, func(p string, r vaultdb.Record) bool {
		return r.Kind == entry.KindFile && under(p, prefix)
	})
	items := make([]item, 0, len(paths))
	for _, p := range paths {
		items = append(items, item{p, v.index.Rec(p)})
	}
	v.mu.Unlock()
	next := ""
	var found []folder.Change
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return res, cursor, err
		}
		if maxBytes > 0 && res.Bytes >= maxBytes || maxFiles > 0 && res.Files+res.Skipped >= maxFiles {
			next = cursor
			break
		}
		cursor = it.path
		c, n, err := v.verifyFile(it.path, it.rec)
		res.Bytes += n
		switch {
		case errors.Is(err, errChangedAgain), errors.Is(err, errRacy):
			res.Skipped++
		case err != nil:
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
		// Under the scan lock, as a scan's own finds are: a scan between
		// moving a file aside and dropping its record would record a
		// deletion (moveAside checks the file again under the lock).
		v.scanMu.Lock()
		res.Corrupt = append(res.Corrupt, v.quarantine(found)...)
		v.scanMu.Unlock()
	}
	res.Seconds = time.Since(start).Seconds()
	v.n.events.Publish(api.Event{Type: api.EventScrubbed, Folder: v.cfg.Folder, Count: res.Files, Bytes: res.Bytes})
	return res, next, nil
}

// verifyFile re-hashes one file whose lstat still matches its index
// record. It returns the Change describing it when its content is damaged
// (folder.IsRot), and the bytes read; errChangedAgain when the metadata
// moved (the scanner's to look at).
func (v *vault) verifyFile(p string, rec vaultdb.Record) (*folder.Change, int64, error) {
	info, err := v.fs.Lstat(p)
	if err != nil {
		return nil, 0, err
	}
	if !statMatches(info, rec) {
		return nil, 0, errChangedAgain
	}
	f, err := v.fs.Open(p)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	h := chunk.NewHasher()
	n, err := io.Copy(h, io.LimitReader(f, int64(rec.Size)+1))
	if errors.Is(err, syscall.EIO) {
		// A file that cannot be read back while its metadata is as
		// recorded sits on a bad sector: damaged, like a wrong hash.
		if after, serr := v.fs.Lstat(p); serr == nil && statMatches(after, rec) {
			v.log.Warn("a file cannot be read back (I/O error): taken for damage", "path", p, "err", err)
			now := folder.Record{Path: p, Kind: folder.KindFile, Size: info.Size, MTime: info.MTime, Inode: info.Inode, Ctime: info.Ctime}
			old := folder.Record{Path: p, Kind: folder.KindFile, Size: int64(rec.Size), MTime: rec.MTime, Inode: rec.Inode, Ctime: rec.Ctime, Hash: rec.Hash}
			return &folder.Change{Type: folder.Modified, Path: p, Old: old, New: now}, n, nil
		}
	}
	if err != nil {
		return nil, n, fmt.Errorf("reading %s: %w", p, err)
	}
	after, err := v.fs.Lstat(p)
	if err != nil || !statMatches(after, rec) || n != int64(rec.Size) {
		return nil, n, errChangedAgain
	}
	var now folder.Record
	now.Path, now.Kind, now.Size, now.MTime, now.Inode, now.Ctime = p, folder.KindFile, info.Size, info.MTime, info.Inode, info.Ctime
	now.Hash = h.Sum256()
	old := folder.Record{Path: p, Kind: folder.KindFile, Size: int64(rec.Size), MTime: rec.MTime, Inode: rec.Inode, Ctime: rec.Ctime, Hash: rec.Hash}
	if !folder.IsRot(old, true, now) {
		return nil, n, nil
	}
	if v.racy(rec) {
		v.log.Warn("a file's content differs from what was recorded, but it was recorded within a timestamp tick of its last write: taken for an edit weft missed, not rot; run `weft scan` after editing it again",
			"path", p)
		return nil, n, errRacy
	}
	return &folder.Change{Type: folder.Modified, Path: p, Old: old, New: now}, n, nil
}

// errRacy: a mismatch the scrub cannot call rot (see racy).
var errRacy = errors.New("recorded too close to its last write")

// racyWindow is how close to a file's mtime its recording must have been
// for a later mismatch to be an unseen edit rather than rot: a write in
// the same timestamp tick as the scan that recorded the file moves neither
// mtime nor ctime (git's "racy" entries). Two seconds covers the coarsest
// clocks weft meets (FAT, HFS+, SMB).
const racyWindow = 2 * time.Second

// racy reports whether this device recorded rec within racyWindow of the
// file's mtime, so that a write right after the scan could have left the
// metadata unchanged. Versions written by the applier are never racy: it
// took the metadata from the file it had just written.
func (v *vault) racy(rec vaultdb.Record) bool {
	if rec.Version.Author != v.n.id.ID() {
		return false
	}
	e, err := v.db.Get(rec.Version.Author, rec.Version.Seq)
	if err != nil {
		return true // unknown: not rot
	}
	recorded := time.UnixMilli(e.Time())
	return recorded.Sub(time.Unix(0, rec.MTime)) < racyWindow
}

// statMatches reports whether an lstat shows the file the index recorded,
// unchanged (size, mtime, inode, ctime).
func statMatches(info folder.FileInfo, rec vaultdb.Record) bool {
	return info.Kind == folder.KindFile && info.Size == int64(rec.Size) && info.MTime == rec.MTime && info.Inode == rec.Inode && info.Ctime == rec.Ctime
}

// scrubLoop re-verifies the folder slice by slice until ctx ends: every
// file once per scrubPeriod (docs/folder.md, "Rot").
func (v *vault) scrubLoop(ctx context.Context) {
	tick := time.NewTicker(scrubTick)
	defer tick.Stop()
	cursor := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v.mu.Lock()
		total, files := v.index.Bytes(), v.index.Files()
		v.mu.Unlock()
		share := float64(scrubTick) / float64(scrubPeriod)
		res, next, err := v.scrubPass(ctx, "", cursor,
			max(int64(float64(total)*share)+1, scrubMinBytes), max(int(float64(files)*share)+1, scrubMinFiles))
		if err != nil {
			continue // a stopped folder, or shutting down
		}
		if next == "" && cursor != "" {
			v.log.Debug("scrub pass finished")
		}
		cursor = next
		if len(res.Corrupt) > 0 {
			v.log.Warn("scrub found damaged files", "files", res.Corrupt)
		}
		// The version store's share of a week, with a smaller floor than
		// the folder's: it holds copies (a damaged one is fetched again,
		// not lost), and an idle agent should not re-read a small store
		// every few minutes.
		if v.keep.Available() {
			if _, _, err := v.keep.Scrub(ctx, max(int64(float64(v.keep.StoreBytes())*share)+1, scrubMinVersionBytes)); err != nil && ctx.Err() == nil {
				v.log.Warn("scrubbing the version store", "err", err)
			}
		}
	}
}

// Scrub re-verifies every file now (or those under req.Path), unpaced,
// and waits: what `weft scrub` runs. Damaged files are moved aside and
// written again, as the background scrub does.
func (n *Node) Scrub(ctx context.Context, req api.ScrubRequest) ([]api.ScrubResult, error) {
	vaults, rel := n.vaultsNow(), ""
	if req.Path != "" {
		v, p, err := n.resolvePath(req.Path)
		if err != nil {
			return nil, err
		}
		vaults, rel = []*vault{v}, p
	}
	out := []api.ScrubResult{}
	for _, v := range vaults {
		start := time.Now()
		res, _, err := v.scrubPass(ctx, rel, "", 0, 0)
		if err != nil {
			return out, fmt.Errorf("scrubbing %s: %w", v.cfg.Folder, err)
		}
		if rel == "" {
			if res.VersionBytes, res.VersionCorrupt, err = v.keep.Scrub(ctx, 0); err != nil {
				return out, fmt.Errorf("scrubbing the version store of %s: %w", v.cfg.Folder, err)
			}
			res.Seconds = time.Since(start).Seconds()
		}
		out = append(out, res)
	}
	return out, nil
}
