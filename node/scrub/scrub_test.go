package scrub

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/chunk"
)

// fakeVault is a Vault over a real folder whose records are a map.
type fakeVault struct {
	t       *testing.T
	dir     string
	fs      folder.FS
	recs    map[string]File
	racy    map[string]bool
	checked error
	moved   [][]string
	events  int
	// sliceAll makes Slice ignore max; readHook sees each file read.
	sliceAll bool
	readHook func(path string)
}

func newFakeVault(t *testing.T) *fakeVault {
	dir := t.TempDir()
	fsys, err := folder.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeVault{t: t, dir: dir, fs: fsys, recs: map[string]File{}, racy: map[string]bool{}}
}

// record writes content at p and records it as holding recorded's hash
// (the same content for a sound file, another for a damaged one).
func (f *fakeVault) record(p, content, recorded string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, p), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	info, err := f.fs.Lstat(p)
	if err != nil {
		f.t.Fatal(err)
	}
	h := chunk.NewHasher()
	h.Write([]byte(recorded))
	f.recs[p] = File{Rec: folder.Record{Path: p, Kind: folder.KindFile, Size: info.Size, MTime: info.MTime, Inode: info.Inode, Ctime: info.Ctime, Hash: h.Sum256()}}
}

func (f *fakeVault) Folder() string { return f.dir }
func (f *fakeVault) Check() error   { return f.checked }
func (f *fakeVault) Slice(prefix, cursor string, max int) ([]File, bool) {
	var paths []string
	for p := range f.recs {
		if p > cursor && strings.HasPrefix(p, prefix) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	more := false
	if max > 0 && len(paths) > max && !f.sliceAll {
		paths, more = paths[:max], true
	}
	var out []File
	for _, p := range paths {
		out = append(out, f.recs[p])
	}
	return out, more
}
func (f *fakeVault) Size() (int64, int) { return 0, len(f.recs) }
func (f *fakeVault) FS() folder.FS {
	if f.readHook == nil {
		return f.fs
	}
	return hookFS{f.fs, f.readHook}
}

// hookFS reports each file opened.
type hookFS struct {
	folder.FS
	opened func(string)
}

func (h hookFS) Open(p string) (folder.File, error) {
	h.opened(p)
	return h.FS.Open(p)
}
func (f *fakeVault) RecordedNear(fl File) bool { return f.racy[fl.Rec.Path] }
func (f *fakeVault) Publish(api.Event)         { f.events++ }
func (f *fakeVault) Versions() VersionStore    { return noVersions{} }
func (f *fakeVault) Log() *slog.Logger         { return slog.New(slog.DiscardHandler) }
func (f *fakeVault) Quarantine(found []folder.Change) []string {
	var ps []string
	for _, c := range found {
		ps = append(ps, c.Path)
	}
	f.moved = append(f.moved, ps)
	return ps
}

type noVersions struct{}

func (noVersions) Available() bool                                  { return false }
func (noVersions) StoreBytes() int64                                { return 0 }
func (noVersions) Scrub(context.Context, int64) (int64, int, error) { return 0, 0, nil }

func TestPassFindsRotAndNothingElse(t *testing.T) {
	f := newFakeVault(t)
	f.record("a-sound.txt", "hello", "hello")
	f.record("b-rotten.txt", "hellp", "hello") // one byte flipped, metadata as recorded
	f.record("c-racy.txt", "edited", "editex") // recorded within a tick of its write
	f.racy["c-racy.txt"] = true
	f.record("d-edited.txt", "new", "old")
	f.recs["d-edited.txt"] = func(fl File) File { fl.Rec.MTime--; return fl }(f.recs["d-edited.txt"]) // its mtime moved: an edit, the scanner's
	res, err := Now(context.Background(), f, "")
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	if !slices.Equal(res.Corrupt, []string{"b-rotten.txt"}) || len(f.moved) != 1 {
		t.Fatalf("corrupt %v (quarantined %v), want [b-rotten.txt]", res.Corrupt, f.moved)
	}
	if res.Files != 2 || res.Skipped != 2 || f.events != 1 {
		t.Fatalf("files %d skipped %d events %d, want 2, 2, 1 (the racy and the edited file skipped)", res.Files, res.Skipped, f.events)
	}
}

func TestPassSlicesResumeAtTheCursor(t *testing.T) {
	f := newFakeVault(t)
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		f.record(p, p, p)
	}
	f.sliceAll = true // the fake hands every file: Pass must stop at its cap
	var read []string
	f.readHook = func(p string) { read = append(read, p) }
	cursor := ""
	for range 10 {
		res, next, err := Pass(context.Background(), f, "", cursor, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if res.Files > 2 {
			t.Fatalf("a slice of at most 2 files read %d", res.Files)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if !slices.Equal(read, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("slices read %v, want every file once in order", read)
	}
}

func TestPassRefusesAStoppedFolder(t *testing.T) {
	f := newFakeVault(t)
	f.record("a", "a", "b")
	f.checked = os.ErrNotExist
	if _, _, err := Pass(context.Background(), f, "", "", 0, 0); err == nil || len(f.moved) != 0 {
		t.Fatalf("a stopped folder: %v, quarantined %v; want an error and nothing moved", err, f.moved)
	}
}
