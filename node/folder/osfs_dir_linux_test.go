//go:build linux

package folder

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func openOSDir(t *testing.T) (*OSFS, Dir) {
	t.Helper()
	o, err := OpenOS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	if err := o.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := o.OpenDir("d")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return o, d
}

// OpenDir refuses what ReadDir refuses: a symlink, a file, a missing
// directory, a path that climbs out.
func TestOSFSOpenDirRefuses(t *testing.T) {
	o, _ := openOSDir(t)
	if err := os.WriteFile(filepath.Join(o.Dir(), "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(o.Dir(), "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want error
	}{
		{"link", ErrSymlinkParent},
		{"link/x", ErrSymlinkParent},
		{"file", ErrParentNotDir},
		{"missing", fs.ErrNotExist},
		{"../x", ErrBadPath},
		{"/etc", ErrBadPath},
	} {
		d, err := o.OpenDir(tc.dir)
		if !errors.Is(err, tc.want) {
			t.Errorf("OpenDir(%q): got %v, want %v", tc.dir, err, tc.want)
		}
		if d != nil {
			d.Close()
		}
	}
}

// Every Dir method refuses anything but one path component.
func TestOSDirRefusesNonNames(t *testing.T) {
	_, d := openOSDir(t)
	for _, name := range []string{"", ".", "..", "a/b", "/a", "a\x00"} {
		if _, err := d.Lstat(name); !errors.Is(err, ErrBadPath) {
			t.Errorf("Lstat(%q): got %v, want %v", name, err, ErrBadPath)
		}
		if err := d.Remove(name); !errors.Is(err, ErrBadPath) {
			t.Errorf("Remove(%q): got %v, want %v", name, err, ErrBadPath)
		}
		if err := d.Rename("x", name); !errors.Is(err, ErrBadPath) {
			t.Errorf("Rename(x, %q): got %v, want %v", name, err, ErrBadPath)
		}
		if err := d.RenameNoReplace(name, "x"); !errors.Is(err, ErrBadPath) {
			t.Errorf("RenameNoReplace(%q, x): got %v, want %v", name, err, ErrBadPath)
		}
		if err := d.Exchange(name, "x"); !errors.Is(err, ErrBadPath) {
			t.Errorf("Exchange(%q, x): got %v, want %v", name, err, ErrBadPath)
		}
	}
	if _, err := d.CreateTemp("a/"); !errors.Is(err, ErrBadPath) {
		t.Errorf("CreateTemp(a/): got %v, want %v", err, ErrBadPath)
	}
}

// The temp file: mode 0600, written, its mode and mtime set through the
// descriptor, then moved with the directory's renames and removed.
func TestOSDirTempFile(t *testing.T) {
	o, d := openOSDir(t)
	f, err := d.CreateTemp(TempPrefix)
	if err != nil {
		t.Fatal(err)
	}
	dir, name := splitPath(f.Path())
	if dir != "d" || len(name) <= len(TempPrefix) || name[:len(TempPrefix)] != TempPrefix {
		t.Fatalf("got temp path %q, want d/%s...", f.Path(), TempPrefix)
	}
	if info, err := f.Stat(); err != nil || info.Mode != 0o600 || info.Kind != KindFile {
		t.Fatalf("new temp file: got %+v, %v, want a file of mode 0600", info, err)
	}
	if _, err := io.WriteString(f, "content"); err != nil {
		t.Fatal(err)
	}
	mf, ok := f.(MetaFile)
	if !ok {
		t.Fatalf("got %T, want a MetaFile", f)
	}
	if err := mf.Chmod(0o755 | fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	const mtime = 1_700_000_000_123_456_789
	if err := mf.Chtimes(mtime); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close: got %v, want %v", err, fs.ErrClosed)
	}
	info, err := d.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != 7 || info.Mode != 0o755 || info.MTime != mtime {
		t.Errorf("got size %d mode %o mtime %d, want 7, 755, %d", info.Size, info.Mode, info.MTime, mtime)
	}
	if want, _ := o.Lstat(f.Path()); want != info {
		t.Errorf("Dir.Lstat got %+v, FS.Lstat %+v", info, want)
	}

	if err := d.RenameNoReplace(name, "target"); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, o, "d/target"); got != "content" {
		t.Errorf("got d/target = %q, want content", got)
	}
	put(t, o, "d/other", "other")
	if err := d.RenameNoReplace("other", "target"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("RenameNoReplace onto an item: got %v, want %v", err, fs.ErrExist)
	}
	if err := d.Exchange("other", "target"); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, o, "d/target"); got != "other" {
		t.Errorf("after Exchange got d/target = %q, want other", got)
	}
	if err := d.Rename("other", "target"); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(t, o, "d/target"); got != "content" {
		t.Errorf("after Rename got d/target = %q, want content", got)
	}
	if err := o.Mkdir("d/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"target", "empty"} {
		if err := d.Remove(n); err != nil {
			t.Fatalf("Remove(%s): %v", n, err)
		}
		if _, err := d.Lstat(n); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Lstat(%s) after Remove: got %v, want %v", n, err, fs.ErrNotExist)
		}
	}
	if err := d.Remove("target"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove of a missing name: got %v, want %v", err, fs.ErrNotExist)
	}
}

// Dir.Lstat does not follow a symlink.
func TestOSDirLstatSymlink(t *testing.T) {
	o, d := openOSDir(t)
	if err := o.Symlink("/etc/passwd", "d/l"); err != nil {
		t.Fatal(err)
	}
	info, err := d.Lstat("l")
	if err != nil || info.Kind != KindSymlink {
		t.Fatalf("got %+v, %v, want a symlink", info, err)
	}
}

// A directory moved away and replaced by a symlink in the middle of a
// batch: the batch goes on in the directory it opened (the files land
// where it went), and nothing is written through the symlink.
func TestWriteFilesDirSwappedForSymlink(t *testing.T) {
	o, err := OpenOS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	outside := t.TempDir()
	a := newApplier(t, o, MapIndex{}, Folding{})
	swapped := false
	a.cfg.TestOnlyBeforeRename = func(tmp, target string) error {
		if !swapped {
			swapped = true
			if err := os.Rename(filepath.Join(o.Dir(), "d"), filepath.Join(o.Dir(), "moved")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(o.Dir(), "d")); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	var ws []FileWrite
	for _, n := range []string{"d/a", "d/b", "d/c"} {
		ws = append(ws, FileWrite{Version: FileVersion{Path: n, Size: 1, MTime: 1e18}, Content: io.LimitReader(zeros{}, 1)})
	}
	for i, r := range a.WriteFiles(ctx, ws) {
		if r.Err != nil {
			t.Errorf("%s: %v", ws[i].Version.Path, r.Err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("got %d entries written through the symlink, want 0", len(ents))
	}
	for _, n := range []string{"moved/a", "moved/b", "moved/c"} {
		if got, ok := read(t, o, n); !ok || got != "\x00" {
			t.Errorf("%s: got %q, %v, want the applied file", n, got, ok)
		}
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }
