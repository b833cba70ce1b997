package folder

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
)

var ctx = context.Background()

func newApplier(t *testing.T, fsys FS, idx Index, fold Folding) *Applier {
	t.Helper()
	a, err := NewApplier(ApplierConfig{FS: fsys, Index: idx, Folding: fold})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeVersion applies content at p and records the outcome in idx.
func writeVersion(t *testing.T, a *Applier, idx MapIndex, p, content string, exec bool) (Outcome, error) {
	t.Helper()
	out, err := a.WriteFile(ctx, FileVersion{Path: p, Size: int64(len(content)), MTime: 1_600_000_000_000_000_000, Executable: exec}, strings.NewReader(content))
	if err == nil {
		idx.Put(RecordOf(out.Path, out.Info))
	}
	return out, err
}

func noTemps(t *testing.T, fsys FS) {
	t.Helper()
	for _, p := range tree(t, fsys) {
		if strings.Contains(p, TempPrefix) {
			t.Errorf("temp file left: %s", p)
		}
	}
}

func TestApplyWriteFile(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		out, err := writeVersion(t, a, idx, "x/y/run.sh", "#!/bin/sh\n", true)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := read(t, fsys, "x/y/run.sh"); got != "#!/bin/sh\n" {
			t.Errorf("content = %q", got)
		}
		if out.Info.Mode != 0o755 || out.Info.MTime != 1_600_000_000_000_000_000 {
			t.Errorf("mode %o mtime %d, want 755 and 1600000000000000000", out.Info.Mode, out.Info.MTime)
		}
		// What the applier reports is what a scan sees: no change.
		s := newScanner(t, fsys, idx)
		idx.Put(Record{Path: "x", Kind: KindDir, Mode: 0o755})
		idx.Put(Record{Path: "x/y", Kind: KindDir, Mode: 0o755})
		r, _ := s.Scan(ctx)
		for _, c := range r.Changes {
			if c.Path == "x/y/run.sh" && c.New.Hash == [32]byte{} {
				t.Errorf("applied file reported changed: %+v", c)
			}
		}
		// Replace an indexed, unchanged file: the exec bit goes.
		out, err = writeVersion(t, a, idx, "x/y/run.sh", "echo hi\n", false)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := read(t, fsys, "x/y/run.sh"); got != "echo hi\n" || out.Info.Mode != 0o644 {
			t.Errorf("after replace: %q mode %o, want echo hi and 644", got, out.Info.Mode)
		}
		noTemps(t, fsys)
	})
}

// TestApplyNeverOverwritesLocalChange: a file modified after its last scan,
// or one the index never saw, is never replaced or deleted.
func TestApplyNeverOverwritesLocalChange(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		if _, err := writeVersion(t, a, idx, "notes.md", "v1", false); err != nil {
			t.Fatal(err)
		}
		appendTo(t, fsys, "notes.md", " local edit")
		if _, err := writeVersion(t, a, idx, "notes.md", "remote v2", false); !errors.Is(err, ErrLocalChange) {
			t.Errorf("write over edited file = %v, want ErrLocalChange", err)
		}
		if err := a.Delete(ctx, "notes.md"); !errors.Is(err, ErrLocalChange) {
			t.Errorf("delete edited file = %v, want ErrLocalChange", err)
		}
		put(t, fsys, "unknown.md", "never scanned")
		if _, err := writeVersion(t, a, idx, "unknown.md", "remote", false); !errors.Is(err, ErrLocalChange) {
			t.Errorf("write over unscanned file = %v, want ErrLocalChange", err)
		}
		if err := fsys.Symlink("x", "l"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.WriteSymlink(ctx, "l", "y"); !errors.Is(err, ErrLocalChange) {
			t.Errorf("replace unscanned symlink = %v, want ErrLocalChange", err)
		}
		if got, _ := read(t, fsys, "notes.md"); got != "v1 local edit" {
			t.Errorf("notes.md = %q, want the local edit", got)
		}
		if got, _ := read(t, fsys, "unknown.md"); got != "never scanned" {
			t.Errorf("unknown.md = %q", got)
		}
		noTemps(t, fsys)
	})
}

func TestApplySizeMismatch(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		writeVersion(t, a, idx, "f", "old", false)
		for _, content := range []string{"short", "far too long"} {
			_, err := a.WriteFile(ctx, FileVersion{Path: "f", Size: 7}, strings.NewReader(content))
			if !errors.Is(err, ErrSizeMismatch) {
				t.Errorf("content %q for size 7: %v, want ErrSizeMismatch", content, err)
			}
		}
		if got, _ := read(t, fsys, "f"); got != "old" {
			t.Errorf("f = %q, want old", got)
		}
		noTemps(t, fsys)
	})
}

func TestApplyRejectsBadPaths(t *testing.T) {
	outside := t.TempDir()
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		if err := fsys.Symlink(outside, "link"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"../x", "/etc/x", "a/../../x", "link/x", "link/sub/x", ".weft/x", TempPrefix + "1", "cafe\u0301"} {
			if _, err := writeVersion(t, a, idx, p, "evil", false); err == nil {
				t.Errorf("WriteFile(%q) succeeded", p)
			}
			if _, err := a.MakeDir(ctx, p, 0); err == nil {
				t.Errorf("MakeDir(%q) succeeded", p)
			}
			if _, err := a.WriteSymlink(ctx, p, "/etc/passwd"); err == nil {
				t.Errorf("WriteSymlink(%q) succeeded", p)
			}
			if err := a.Delete(ctx, p); err == nil {
				t.Errorf("Delete(%q) succeeded", p)
			}
		}
		if got := tree(t, fsys); !slices.Equal(got, []string{"link"}) {
			t.Errorf("tree = %q, want [link]", got)
		}
	})
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("something was written outside the folder: %d entries", len(ents))
	}
}

func TestApplyDeleteAndDirs(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		out, err := a.MakeDir(ctx, "d/e", 0o750)
		if err != nil {
			t.Fatal(err)
		}
		if out.Info.Kind != KindDir || out.Info.Mode != 0o750 {
			t.Errorf("MakeDir info = %+v, want a 0750 dir", out.Info)
		}
		idx.Put(RecordOf("d/e", out.Info))
		d, _ := fsys.Lstat("d")
		idx.Put(RecordOf("d", d))
		writeVersion(t, a, idx, "d/e/f", "f", false)
		put(t, fsys, "d/e/stranger", "local, unknown")

		if err := a.Delete(ctx, "d/e/f"); err != nil {
			t.Fatal(err)
		}
		delete(idx, "d/e/f")
		var ne *DirNotEmptyError
		if err := a.Delete(ctx, "d/e"); !errors.As(err, &ne) || !errors.Is(err, ErrDirNotEmpty) || !slices.Equal(ne.Entries, []string{"stranger"}) {
			t.Fatalf("delete dir with unknown file = %v, want DirNotEmptyError [stranger]", err)
		}
		fsys.Remove("d/e/stranger")
		if err := a.Delete(ctx, "d/e"); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, "d/e"); err != nil {
			t.Errorf("deleting a missing path = %v, want nil", err)
		}
		if got := tree(t, fsys); !slices.Equal(got, []string{"d"}) {
			t.Errorf("tree = %q, want [d]", got)
		}
	})
}

// TestApplyKindChanges walks one path through file -> dir -> symlink ->
// file.
func TestApplyKindChanges(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		writeVersion(t, a, idx, "p", "file", false)
		out, err := a.MakeDir(ctx, "p", 0)
		if err != nil {
			t.Fatalf("file -> dir: %v", err)
		}
		idx.Put(RecordOf("p", out.Info))
		out, err = a.WriteSymlink(ctx, "p", "target/elsewhere")
		if err != nil {
			t.Fatalf("dir -> symlink: %v", err)
		}
		idx.Put(RecordOf("p", out.Info))
		if got, _ := fsys.Readlink("p"); got != "target/elsewhere" {
			t.Errorf("link = %q", got)
		}
		if _, err := writeVersion(t, a, idx, "p", "file again", false); err != nil {
			t.Fatalf("symlink -> file: %v", err)
		}
		if got, _ := read(t, fsys, "p"); got != "file again" {
			t.Errorf("p = %q", got)
		}
		// A directory with content is not replaced by a file.
		out, _ = a.MakeDir(ctx, "q", 0)
		idx.Put(RecordOf("q", out.Info))
		put(t, fsys, "q/inside", "x")
		if _, err := writeVersion(t, a, idx, "q", "file", false); !errors.Is(err, ErrDirNotEmpty) {
			t.Errorf("file over non-empty dir = %v, want ErrDirNotEmpty", err)
		}
		noTemps(t, fsys)
	})
}

func TestApplyRename(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		writeVersion(t, a, idx, "a", "content", false)
		writeVersion(t, a, idx, "b", "other", false)
		if _, err := a.Rename(ctx, "a", "b"); !errors.Is(err, ErrLocalChange) {
			t.Errorf("rename onto existing = %v, want ErrLocalChange", err)
		}
		out, err := a.Rename(ctx, "a", "sub/a2")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := read(t, fsys, "sub/a2"); got != "content" || out.Info.Size != 7 {
			t.Errorf("sub/a2 = %q", got)
		}
	})
}

// TestApplyCrashOldOrNew runs one replace over a MemFS that crashes at
// its n-th mutating operation, for every n, and checks the file is then
// either entirely old or entirely new, and CleanTemps leaves no temp file.
func TestApplyCrashOldOrNew(t *testing.T) {
	for n := 1; ; n++ {
		m := NewMemFS(MemFSConfig{})
		idx := MapIndex{}
		a := newApplier(t, m, idx, Folding{})
		if _, err := writeVersion(t, a, idx, "dir/f", "old content", false); err != nil {
			t.Fatal(err)
		}
		c := &crashFS{MemFS: m, at: n}
		a = newApplier(t, c, idx, Folding{})
		_, err := writeVersion(t, a, idx, "dir/f", "new content!", false)
		if !c.crashed {
			if err != nil {
				t.Fatal(err)
			}
			m.Crash()
			if got, _ := read(t, m, "dir/f"); got != "new content!" {
				t.Fatalf("after a completed apply and a crash: %q, want the new content", got)
			}
			if n < 5 {
				t.Fatalf("only %d mutating operations: the test is not exercising anything", n)
			}
			return
		}
		got, ok := read(t, m, "dir/f")
		if !ok || (got != "old content" && got != "new content!") {
			t.Fatalf("crash at op %d: dir/f = %q (present %v), want old or new", n, got, ok)
		}
		a = newApplier(t, m, idx, Folding{})
		if _, err := a.CleanTemps(ctx); err != nil {
			t.Fatal(err)
		}
		noTemps(t, m)
	}
}

// crashFS wraps a MemFS and crashes it at the at-th mutating operation
// (file writes and syncs included); every operation after fails.
type crashFS struct {
	*MemFS
	at, ops int
	crashed bool
}

var errCrashed = errors.New("crashed")

func (c *crashFS) op() error {
	if c.crashed {
		return errCrashed
	}
	c.ops++
	if c.ops == c.at {
		c.crashed = true
		c.MemFS.Crash()
		return errCrashed
	}
	return nil
}

func (c *crashFS) CreateTemp(dir, prefix string) (File, error) {
	if err := c.op(); err != nil {
		return nil, err
	}
	f, err := c.MemFS.CreateTemp(dir, prefix)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}
func (c *crashFS) Rename(a, b string) error {
	return c.do(func() error { return c.MemFS.Rename(a, b) })
}
func (c *crashFS) Remove(p string) error { return c.do(func() error { return c.MemFS.Remove(p) }) }
func (c *crashFS) Mkdir(p string, m fs.FileMode) error {
	return c.do(func() error { return c.MemFS.Mkdir(p, m) })
}
func (c *crashFS) Chmod(p string, m fs.FileMode) error {
	return c.do(func() error { return c.MemFS.Chmod(p, m) })
}
func (c *crashFS) Chtimes(p string, t int64) error {
	return c.do(func() error { return c.MemFS.Chtimes(p, t) })
}
func (c *crashFS) SyncDir(p string) error { return c.do(func() error { return c.MemFS.SyncDir(p) }) }
func (c *crashFS) do(f func() error) error {
	if err := c.op(); err != nil {
		return err
	}
	return f()
}

type crashFile struct {
	File
	c *crashFS
}

func (f *crashFile) Write(b []byte) (int, error) {
	if err := f.c.op(); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}
func (f *crashFile) Sync() error {
	if err := f.c.op(); err != nil {
		return err
	}
	return f.File.Sync()
}

// TestApplyKilledBeforeRename stops an apply on the real FS between the
// durable temp file and the rename, as a kill would: the old file stays
// whole under its name and CleanTemps removes the temp file.
func TestApplyKilledBeforeRename(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		writeVersion(t, a, idx, "f", "old", false)
		var tmpSeen string
		a.cfg.TestOnlyBeforeRename = func(tmp, target string) error {
			tmpSeen = tmp
			return errors.New("killed")
		}
		if _, err := writeVersion(t, a, idx, "f", "new!", false); err == nil {
			t.Fatal("apply succeeded despite the kill")
		}
		if got, _ := read(t, fsys, "f"); got != "old" {
			t.Errorf("f = %q, want old", got)
		}
		if got, ok := read(t, fsys, tmpSeen); !ok || got != "new!" {
			t.Errorf("temp %s = %q (present %v), want the new content left behind", tmpSeen, got, ok)
		}
		removed, err := newApplier(t, fsys, idx, Folding{}).CleanTemps(ctx)
		if err != nil || !slices.Equal(removed, []string{tmpSeen}) {
			t.Errorf("CleanTemps = %q, %v, want [%s]", removed, err, tmpSeen)
		}
		noTemps(t, fsys)
	})
}

// TestScanListsLeftTemps: a temp file a killed apply left, at the root or
// deeper, is listed by the next scan (Result.Temps) and not reported as a
// change; RemoveTemps removes exactly those, and refuses any name that is
// not the applier's temp file, so a caller's mistake cannot delete a
// user's file or weft's own state.
func TestScanListsLeftTemps(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		var left []string
		a.cfg.TestOnlyBeforeRename = func(tmp, target string) error {
			left = append(left, tmp)
			return errors.New("killed")
		}
		for _, p := range []string{"top.md", "deep/er/note.md"} {
			if _, err := writeVersion(t, a, idx, p, "content of "+p, false); err == nil {
				t.Fatalf("apply of %s succeeded despite the kill", p)
			}
		}
		put(t, fsys, "my.weft-tmp-notes.md", "a user's file, only named alike")
		slices.Sort(left)
		if len(left) != 2 {
			t.Fatalf("the killed applies left %q, want 2 temp files", left)
		}

		res := scanInto(t, newScanner(t, fsys, idx), idx)
		if !slices.Equal(res.Temps, left) {
			t.Errorf("scan listed temps %q, want %q", res.Temps, left)
		}
		for _, c := range res.Changes {
			if _, name := splitPath(c.Path); strings.HasPrefix(name, TempPrefix) {
				t.Errorf("temp file %s was reported as a change", c.Path)
			}
		}

		for _, bad := range []string{"my.weft-tmp-notes.md", "deep/er", WorkDir + "/" + TempPrefix + "marker-1", WorkDir} {
			if _, err := a.RemoveTemps([]string{bad}); !errors.Is(err, ErrBadPath) {
				t.Errorf("RemoveTemps(%q) = %v, want ErrBadPath", bad, err)
			}
		}
		removed, err := a.RemoveTemps(res.Temps)
		if err != nil || !slices.Equal(removed, left) {
			t.Errorf("RemoveTemps = %q, %v, want %q", removed, err, left)
		}
		for _, p := range left {
			if _, ok := read(t, fsys, p); ok {
				t.Errorf("temp file %s is still there", p)
			}
		}
		if got, ok := read(t, fsys, "my.weft-tmp-notes.md"); !ok || got != "a user's file, only named alike" {
			t.Errorf("the user's file is %q (present %v)", got, ok)
		}
	})
}

// TestApplyCaseInsensitive checks the name rules on a case-insensitive
// FS (docs/folder.md, "Names").
func TestApplyCaseInsensitive(t *testing.T) {
	fold := Folding{CaseInsensitive: true}
	setup := func(t *testing.T) (*MemFS, MapIndex, *Applier) {
		m := NewMemFS(MemFSConfig{Folding: fold})
		idx := MapIndex{}
		a := newApplier(t, m, idx, fold)
		if _, err := writeVersion(t, a, idx, "Readme.md", "readme", false); err != nil {
			t.Fatal(err)
		}
		return m, idx, a
	}
	t.Run("earlier path wins the name", func(t *testing.T) {
		m, idx, a := setup(t)
		out, err := writeVersion(t, a, idx, "README.md", "README", false)
		if err != nil {
			t.Fatal(err)
		}
		if out.Path != "README.md" || out.Collision != "Readme.md" || out.MovedAside != "Readme.case-conflict.md" {
			t.Errorf("outcome = %+v", out)
		}
		if got := tree(t, m); !slices.Equal(got, []string{"README.md", "Readme.case-conflict.md"}) {
			t.Errorf("tree = %q", got)
		}
	})
	t.Run("later path gets the collision name", func(t *testing.T) {
		m, idx, a := setup(t)
		out, err := writeVersion(t, a, idx, "readme.md", "lower", false)
		if err != nil {
			t.Fatal(err)
		}
		if out.Path != "readme.case-conflict.md" || out.Collision != "Readme.md" {
			t.Errorf("outcome = %+v", out)
		}
		if got, _ := read(t, m, "Readme.md"); got != "readme" {
			t.Errorf("Readme.md = %q, want untouched", got)
		}
		// A newer version of the same loser replaces its collision copy.
		if out, err := writeVersion(t, a, idx, "readme.md", "lower2", false); err != nil || out.Path != "readme.case-conflict.md" {
			t.Errorf("second write = %+v, %v", out, err)
		}
	})
	t.Run("case-only rename as delete then add", func(t *testing.T) {
		m, idx, a := setup(t)
		if err := a.Delete(ctx, "Readme.md"); err != nil {
			t.Fatal(err)
		}
		delete(idx, "Readme.md")
		if _, err := writeVersion(t, a, idx, "README.md", "readme", false); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, m); !slices.Equal(got, []string{"README.md"}) {
			t.Errorf("tree = %q, want [README.md]", got)
		}
	})
	t.Run("delete of the old name after a rename keeps the file", func(t *testing.T) {
		m, idx, a := setup(t)
		out, err := a.Rename(ctx, "Readme.md", "README.md")
		if err != nil {
			t.Fatal(err)
		}
		idx.Put(RecordOf("README.md", out.Info))
		if err := a.Delete(ctx, "Readme.md"); err != nil {
			t.Fatal(err)
		}
		if got := tree(t, m); !slices.Equal(got, []string{"README.md"}) {
			t.Errorf("tree = %q, want [README.md]", got)
		}
		if got, _ := read(t, m, "README.md"); got != "readme" {
			t.Errorf("README.md = %q", got)
		}
	})
	t.Run("directories merge", func(t *testing.T) {
		m, idx, a := setup(t)
		out, _ := a.MakeDir(ctx, "Docs", 0)
		idx.Put(RecordOf("Docs", out.Info))
		out, err := a.MakeDir(ctx, "docs", 0)
		if err != nil || out.Collision != "Docs" {
			t.Errorf("MakeDir(docs) = %+v, %v, want collision with Docs", out, err)
		}
		if got := tree(t, m); !slices.Equal(got, []string{"Docs", "Readme.md"}) {
			t.Errorf("tree = %q", got)
		}
	})
}

// TestApplyNormalisingFS: on a normalisation-insensitive FS a file stored
// under its NFD name is the same file as its NFC wire path: it is replaced
// in place and deleted by that path, never duplicated.
func TestApplyNormalisingFS(t *testing.T) {
	fold := Folding{NormInsensitive: true}
	m := NewMemFS(MemFSConfig{Folding: fold})
	put(t, m, "cafe\u0301.txt", "from a mac app")
	idx := MapIndex{}
	s, _ := NewScanner(ScannerConfig{FS: m, Index: idx, Folding: fold})
	scanInto(t, s, idx)
	a := newApplier(t, m, idx, fold)
	out, err := writeVersion(t, a, idx, "caf\u00e9.txt", "remote", false)
	if err != nil || out.Collision != "" {
		t.Fatalf("write = %+v, %v, want an in-place replace", out, err)
	}
	if got := tree(t, m); len(got) != 1 {
		t.Errorf("tree = %q, want one entry", got)
	}
	if err := a.Delete(ctx, "caf\u00e9.txt"); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, m); len(got) != 0 {
		t.Errorf("tree after delete = %q, want empty", got)
	}
}
