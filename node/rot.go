package node

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/damaged"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/scrub"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// Rot on a device (docs/folder.md, "Rot"): a file whose content no longer
// matches what was recorded while its size, mtime and inode still do was
// damaged on disk, not edited. It is never recorded as a version (the
// scanner reports it apart, folder.Result.Corrupt); it is moved aside into
// .weft/corrupt/ for the user, its index record is dropped, and the
// applier writes the recorded version again, from local chunks, peers or
// the relay. The scrub (node/scrub) finds rot that moved no metadata at
// all (a bad sector, bit rot) by re-hashing unchanged files at a slow
// pace.

// quarantine handles the damaged files a scan or the scrub found: each is
// moved aside (damaged.MoveAside) and written again from the recorded
// version. It returns the paths it quarantined. A file that changed again
// since it was read is left to the next scan.
func (v *vault) quarantine(found []folder.Change) []string {
	var done []string
	for _, c := range found {
		aside, err := damaged.MoveAside(v.fs, c, v.now())
		if err != nil {
			if !errors.Is(err, damaged.ErrChangedAgain) {
				// Not recorded, not repaired: said in status until it is.
				v.log.Warn("moving a damaged file aside", "path", c.Path, "err", err)
				v.damaged.NotMoved(c.Path, err, v.now())
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
		v.engine.Touch(c.Path)
		v.mu.Unlock()
		v.damaged.MovedAside(c.Path, aside, v.now())
		v.log.Warn("damaged file: its content changed without an edit (disk damage?); the damaged copy is kept aside and the recorded version is written again",
			"path", c.Path, "aside", aside)
		v.events.Publish(api.Event{Type: api.EventCorrupt, Folder: v.cfg.Folder, Path: c.Path, Kind: "file", Error: "content does not match the recorded version; kept at " + aside})
		done = append(done, c.Path)
	}
	if len(done) > 0 {
		v.kick()
	}
	return done
}

// repairedLocked notes that path was written again: a damaged file it
// replaced is repaired. v.mu may be held (damaged.Files is a leaf).
func (v *vault) repairedLocked(p string) {
	if aside, ok := v.damaged.Repaired(p); ok {
		v.log.Info("damaged file repaired", "path", p, "aside", aside)
	}
}

// scrubVault is scrub.Vault for one vault.
type scrubVault struct{ v *vault }

func (s scrubVault) Folder() string { return s.v.cfg.Folder }

func (s scrubVault) Check() error {
	_, err := s.v.guard()
	return err
}

// Slice picks the files with a bounded heap, not by sorting the whole
// index, which a background slice each minute did for a handful of files
// (most of an idle agent's CPU and garbage at 10,000 files;
// docs/benchmarks.md).
func (s scrubVault) Slice(prefix, cursor string, maxFiles int) ([]scrub.File, bool) {
	v := s.v
	v.mu.Lock()
	defer v.mu.Unlock()
	paths, more := v.index.FirstAfter(cursor, maxFiles, func(p string, r vaultdb.Record) bool {
		return r.Kind == entry.KindFile && under(p, prefix)
	})
	out := make([]scrub.File, 0, len(paths))
	for _, p := range paths {
		r := v.index.Rec(p)
		out = append(out, scrub.File{
			Rec:     folder.Record{Path: p, Kind: folder.KindFile, Size: int64(r.Size), MTime: r.MTime, Inode: r.Inode, Ctime: r.Ctime, Hash: r.Hash},
			Version: r.Version,
		})
	}
	return out, more
}

func (s scrubVault) Size() (int64, int) {
	s.v.mu.Lock()
	defer s.v.mu.Unlock()
	return s.v.index.Bytes(), s.v.index.Files()
}

func (s scrubVault) FS() folder.FS { return s.v.fs }

// RecordedNear reads the recording entry's time from the log: a version
// authored elsewhere was written here by the applier, never racy.
func (s scrubVault) RecordedNear(f scrub.File) bool {
	if f.Version.Author != s.v.device.ID() {
		return false
	}
	e, err := s.v.db.Get(f.Version.Author, f.Version.Seq)
	if err != nil {
		return true // unknown: not rot
	}
	return time.UnixMilli(e.Time()).Sub(time.Unix(0, f.Rec.MTime)) < scrub.RacyWindow
}

// Quarantine runs under the scan lock, as a scan's own finds do: a scan
// between moving a file aside and dropping its record would record a
// deletion (moveAside checks the file again under the lock).
func (s scrubVault) Quarantine(found []folder.Change) []string {
	s.v.scanMu.Lock()
	defer s.v.scanMu.Unlock()
	return s.v.quarantine(found)
}

func (s scrubVault) Publish(ev api.Event)         { s.v.events.Publish(ev) }
func (s scrubVault) Versions() scrub.VersionStore { return s.v.keep }
func (s scrubVault) Log() *slog.Logger            { return s.v.log }

// Scrub re-verifies every file now (or those under req.Path), unpaced,
// and waits: what `weft scrub` runs. Damaged files are moved aside and
// written again, as the background scrub does.
func (b apiBackend) Scrub(ctx context.Context, req api.ScrubRequest) ([]api.ScrubResult, error) {
	vaults, rel := b.vaultsNow(), ""
	if req.Path != "" {
		v, p, err := b.resolvePath(req.Path)
		if err != nil {
			return nil, err
		}
		vaults, rel = []*vault{v}, p
	}
	out := []api.ScrubResult{}
	for _, v := range vaults {
		res, err := scrub.Now(ctx, scrubVault{v}, rel)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}
