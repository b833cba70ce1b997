package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/resolve"
	"github.com/weftsync/weft/protocol/entry"
)

// Resolve carries out a decision about a conflict copy (node/resolve).
func (b apiBackend) Resolve(ctx context.Context, req api.ResolveRequest) (api.ResolveResult, error) {
	v, rel, err := b.resolvePath(req.Path)
	if err != nil {
		return api.ResolveResult{}, err
	}
	if req.Take != "" && !filepath.IsAbs(req.Take) {
		return api.ResolveResult{}, api.Classified(api.ErrInvalid, "the file to take must be an absolute path")
	}
	return resolve.Run(ctx, resolveVault{restoreVault{v}}, rel, req, openTaken)
}

// openTaken opens the file a resolution takes as its result: a regular
// file only (a FIFO or a device would block the vault's scans, or never
// end), checked again once open.
func openTaken(p string) (io.ReadCloser, error) {
	if fi, err := os.Lstat(p); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	return f, nil
}

// resolveVault is resolve.Vault for one vault: restore's scan hold and
// record, the folder, and what the index and roster say.
type resolveVault struct{ restoreVault }

func (r resolveVault) FS() folder.FS { return r.v.fs }

func (r resolveVault) IndexedFile(p string) (size, mtime int64, ok bool) {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	rec, ok := r.v.index.Get(p)
	if !ok || rec.Kind != entry.KindFile {
		return 0, 0, false
	}
	return int64(rec.Size), rec.MTime, true
}

func (r resolveVault) ConflictCopies() []string {
	r.v.mu.Lock()
	defer r.v.mu.Unlock()
	var out []string
	for p, rec := range r.v.index.All() {
		if rec.Kind == entry.KindFile && isConflictCopy(p) {
			out = append(out, p)
		}
	}
	return out
}

func (r resolveVault) DeviceName(short string) string {
	for _, d := range r.v.roster.Members() {
		if d.Short() == short {
			return r.v.roster.Name(d)
		}
	}
	return ""
}
