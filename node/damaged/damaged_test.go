package damaged

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

// write makes p (in directory dir, which must exist) hold content and
// returns the change a check of it would report.
func write(t *testing.T, fsys folder.FS, dir, p, content string) folder.Change {
	t.Helper()
	f, err := fsys.CreateTemp(dir, "w-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(f.Path(), p); err != nil {
		t.Fatal(err)
	}
	info, err := fsys.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return folder.Change{Path: p, New: folder.RecordOf(p, info)}
}

// A damaged file is moved under .weft/corrupt with its path and the time,
// unless it changed since the check read it.
func TestMoveAside(t *testing.T) {
	fsys := folder.NewMemFS(folder.MemFSConfig{})
	if err := fsys.Mkdir("notes", 0o755); err != nil {
		t.Fatal(err)
	}
	c := write(t, fsys, "notes", "notes/a.md", "rotted bytes")
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	aside, err := MoveAside(fsys, c, now)
	if err != nil {
		t.Fatal(err)
	}
	if aside != Dir+"/notes/a.md~20261207T120000.000000000Z" {
		t.Fatalf("moved to %q", aside)
	}
	if _, err := fsys.Lstat("notes/a.md"); err == nil {
		t.Error("the damaged file is still at its path")
	}
	if info, err := fsys.Lstat(aside); err != nil || info.Size != int64(len("rotted bytes")) {
		t.Errorf("the damaged copy: %+v, %v", info, err)
	}

	c = write(t, fsys, "notes", "notes/b.md", "read by the check")
	write(t, fsys, "notes", "notes/b.md", "saved again since") // another inode
	if _, err := MoveAside(fsys, c, now); !errors.Is(err, ErrChangedAgain) {
		t.Fatalf("a file changed since the check: %v, want ErrChangedAgain", err)
	}
}

// Files says each damaged file in status until it is written again; one
// that could not be moved says why, and is not noted twice.
func TestFiles(t *testing.T) {
	var f Files
	now := time.Now()
	f.MovedAside("b.md", Dir+"/b.md~x", now)
	f.NotMoved("a.md", errors.New("permission denied"), now)
	f.NotMoved("a.md", errors.New("another reason"), now)
	errs := f.Errors()
	if len(errs) != 2 || errs[0].Path != "a.md" || errs[1].Path != "b.md" || errs[0].Code != api.CodeCorrupt ||
		!strings.Contains(errs[0].Reason, "permission denied") || !strings.Contains(errs[1].Reason, Dir+"/b.md~x") {
		t.Fatalf("errors: %+v", errs)
	}
	if aside, ok := f.Repaired("b.md"); !ok || aside != Dir+"/b.md~x" {
		t.Fatalf("repaired b.md: %q %v", aside, ok)
	}
	if _, ok := f.Repaired("c.md"); ok {
		t.Error("a file never damaged was repaired")
	}
	if errs := f.Errors(); len(errs) != 1 || errs[0].Path != "a.md" {
		t.Fatalf("after b.md's repair: %+v", errs)
	}
}
