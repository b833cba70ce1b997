package folder

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFSRejectsEscapes tries every FS operation with paths that would
// leave the root; each must fail with ErrBadPath.
func TestFSRejectsEscapes(t *testing.T) {
	bad := []string{"../x", "/etc/x", "a/../../x", "..", "a//b", `..\x`}
	eachFS(t, func(t *testing.T, fsys FS) {
		mkdirs(t, fsys, "a")
		for _, p := range bad {
			ops := map[string]error{}
			_, ops["lstat"] = fsys.Lstat(p)
			_, ops["readdir"] = fsys.ReadDir(p)
			_, ops["open"] = fsys.Open(p)
			_, ops["createtemp"] = fsys.CreateTemp(p, "t")
			ops["rename-to"] = fsys.Rename("a", p)
			ops["remove"] = fsys.Remove(p)
			ops["mkdir"] = fsys.Mkdir(p, 0o755)
			ops["symlink"] = fsys.Symlink("target", p)
			_, ops["readlink"] = fsys.Readlink(p)
			ops["chmod"] = fsys.Chmod(p, 0o777)
			ops["chtimes"] = fsys.Chtimes(p, 1)
			ops["syncdir"] = fsys.SyncDir(p)
			for op, err := range ops {
				if !errors.Is(err, ErrBadPath) {
					t.Errorf("%s(%q) = %v, want ErrBadPath", op, p, err)
				}
			}
		}
		if got := tree(t, fsys); !slices.Equal(got, []string{"a"}) {
			t.Errorf("tree = %q, want [a]", got)
		}
	})
}

// TestFSRefusesSymlinkParents makes a symlink to a directory outside the
// root and one to a directory inside it; no operation may pass through
// either.
func TestFSRefusesSymlinkParents(t *testing.T) {
	outside := t.TempDir()
	eachFS(t, func(t *testing.T, fsys FS) {
		mkdirs(t, fsys, "inner")
		put(t, fsys, "inner/f", "x")
		if err := fsys.Symlink(outside, "out"); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Symlink("inner", "in"); err != nil {
			t.Fatal(err)
		}
		for _, link := range []string{"out", "in"} {
			p := link + "/f"
			ops := map[string]error{}
			_, ops["lstat"] = fsys.Lstat(p)
			_, ops["readdir"] = fsys.ReadDir(link)
			_, ops["open"] = fsys.Open(p)
			_, ops["createtemp"] = fsys.CreateTemp(link, "t")
			ops["rename-to"] = fsys.Rename("inner/f", link+"/g")
			ops["remove"] = fsys.Remove(p)
			ops["mkdir"] = fsys.Mkdir(link+"/d", 0o755)
			ops["symlink"] = fsys.Symlink("x", link+"/s")
			ops["chmod"] = fsys.Chmod(p, 0o777)
			ops["syncdir"] = fsys.SyncDir(link)
			for op, err := range ops {
				if !errors.Is(err, ErrSymlinkParent) {
					t.Errorf("%s through %q = %v, want ErrSymlinkParent", op, link, err)
				}
			}
		}
		// Open, Chmod and Chtimes never follow a final symlink either.
		if _, err := fsys.Open("in"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(symlink) = %v, want ErrNotRegular", err)
		}
		if err := fsys.Chmod("out", 0o777); err == nil {
			t.Errorf("Chmod(symlink) succeeded")
		}
		if got, _ := read(t, fsys, "inner/f"); got != "x" {
			t.Errorf("inner/f = %q, want x", got)
		}
	})
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("outside dir holds %d entries, want 0", len(ents))
	}
}

func TestFSBasics(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		put(t, fsys, "d/f.txt", "hello")
		info, err := fsys.Lstat("d/f.txt")
		if err != nil {
			t.Fatal(err)
		}
		if info.Kind != KindFile || info.Size != 5 || info.Name != "f.txt" || info.Mode != 0o644 {
			t.Errorf("lstat = %+v, want a 5-byte 0644 file named f.txt", info)
		}
		if err := fsys.Chtimes("d/f.txt", 1_700_000_000_123_456_789); err != nil {
			t.Fatal(err)
		}
		if info, _ := fsys.Lstat("d/f.txt"); info.MTime != 1_700_000_000_123_456_789 {
			t.Errorf("mtime = %d, want 1700000000123456789", info.MTime)
		}
		if err := fsys.Symlink("../elsewhere", "d/l"); err != nil {
			t.Fatal(err)
		}
		if got, err := fsys.Readlink("d/l"); err != nil || got != "../elsewhere" {
			t.Errorf("readlink = %q, %v, want ../elsewhere", got, err)
		}
		if info, _ := fsys.Lstat("d/l"); info.Kind != KindSymlink {
			t.Errorf("symlink kind = %v, want symlink", info.Kind)
		}
		ents, err := fsys.ReadDir("d")
		if err != nil || len(ents) != 2 || ents[0].Name != "f.txt" || ents[1].Name != "l" {
			t.Errorf("readdir = %+v, %v, want [f.txt l]", ents, err)
		}
		if err := fsys.Remove("d"); err == nil {
			t.Errorf("removing a non-empty directory succeeded")
		}
		if _, err := fsys.Lstat("nope"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("lstat missing = %v, want ErrNotExist", err)
		}
		if err := fsys.Mkdir("d", 0o755); !errors.Is(err, fs.ErrExist) {
			t.Errorf("mkdir existing = %v, want ErrExist", err)
		}
	})
}

// TestMemFSCrash checks the durability model: unsynced content and
// unsynced directory entries vanish at Crash.
func TestMemFSCrash(t *testing.T) {
	m := NewMemFS(MemFSConfig{})
	put(t, m, "synced", "old") // fully synced
	g, _ := m.CreateTemp("", "u")
	m.SyncDir("") // entry durable, content not
	io.WriteString(g, "lost bytes")
	f, _ := m.CreateTemp("", "t")
	io.WriteString(f, "unsynced entry")
	f.Sync()                             // content durable, entry not
	appendTo(t, m, "synced", " and new") // not synced
	m.Crash()
	if got := tree(t, m); !slices.Equal(got, []string{"synced", "u2"}) {
		t.Errorf("tree after crash = %q, want [synced u2]", got)
	}
	if got, _ := read(t, m, "synced"); got != "old" {
		t.Errorf("synced = %q, want old", got)
	}
	if got, _ := read(t, m, "u2"); got != "" {
		t.Errorf("u2 = %q, want empty", got)
	}
}

func TestProbe(t *testing.T) {
	for _, want := range []Folding{{}, {CaseInsensitive: true}, {NormInsensitive: true}, {true, true}} {
		m := NewMemFS(MemFSConfig{Folding: want})
		got, err := Probe(m)
		if err != nil || got != want {
			t.Errorf("Probe(mem %+v) = %+v, %v", want, got, err)
		}
		if ents, _ := m.ReadDir(WorkDir); len(ents) != 0 {
			t.Errorf("probe left %d entries in %s", len(ents), WorkDir)
		}
	}
	dir := t.TempDir()
	o, err := OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	got, err := Probe(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("this machine's temp dir folds names: %+v", got)
	if _, err := os.Stat(filepath.Join(dir, WorkDir)); err != nil {
		t.Errorf("work dir: %v", err)
	}
}
