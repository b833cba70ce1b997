package folder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
)

// countingFS counts the directories a DirOpener FS opens and closes.
type countingFS struct {
	FS
	mu     sync.Mutex
	opened map[string]int
	open   int // held right now
}

func (c *countingFS) OpenDir(dir string) (Dir, error) {
	d, err := c.FS.(DirOpener).OpenDir(dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opened[dir]++
	c.open++
	return &countingDir{Dir: d, c: c}, nil
}

type countingDir struct {
	Dir
	c *countingFS
}

func (d *countingDir) Close() error {
	d.c.mu.Lock()
	d.c.open--
	d.c.mu.Unlock()
	return d.Dir.Close()
}

// dirOpenerFS is an FS with DirOpener over any FS, through pathDir: it
// lets the counting test run on MemFS too.
type dirOpenerFS struct{ FS }

func (d dirOpenerFS) OpenDir(dir string) (Dir, error) { return &pathDir{fs: d.FS, dir: dir}, nil }

// A batch opens each directory it writes into once, creates the missing
// ones, and releases them all before it returns.
func TestWriteFilesOpensEachDirOnce(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		var inner FS = fsys
		if _, ok := fsys.(DirOpener); !ok {
			inner = dirOpenerFS{fsys}
		}
		c := &countingFS{FS: inner, opened: map[string]int{}}
		a := newApplier(t, c, MapIndex{}, Folding{})
		var ws []FileWrite
		for i := range 30 {
			body := fmt.Sprint(i)
			ws = append(ws, FileWrite{
				Version: FileVersion{Path: fmt.Sprintf("d%d/sub/f%02d", i%3, i), Size: int64(len(body)), MTime: 1e18},
				Content: strings.NewReader(body),
			})
		}
		ws = append(ws, FileWrite{Version: FileVersion{Path: "top", Size: 1, MTime: 1e18}, Content: strings.NewReader("t")})
		for i, r := range a.WriteFiles(context.Background(), ws) {
			if r.Err != nil {
				t.Fatalf("%s: %v", ws[i].Version.Path, r.Err)
			}
			want := "t"
			if i < 30 {
				want = fmt.Sprint(i)
			}
			if got, _ := read(t, fsys, ws[i].Version.Path); got != want {
				t.Fatalf("%s: got %q, want %q", ws[i].Version.Path, got, want)
			}
		}
		want := map[string]int{"d0/sub": 1, "d1/sub": 1, "d2/sub": 1, "": 1}
		if fmt.Sprint(c.opened) != fmt.Sprint(want) {
			t.Errorf("got directories opened %v, want %v", c.opened, want)
		}
		if c.open != 0 {
			t.Errorf("got %d directories still open after the batch, want 0", c.open)
		}
		noTemps(t, fsys)
	})
}

// A directory that cannot be created fails every file of the batch in it,
// with the same error, and no other file.
func TestWriteFilesBadParent(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		put(t, fsys, "blocker", "a file where a directory should be")
		a := newApplier(t, fsys, MapIndex{}, Folding{})
		ws := []FileWrite{
			{Version: FileVersion{Path: "blocker/x", Size: 1}, Content: strings.NewReader("x")},
			{Version: FileVersion{Path: "ok/y", Size: 1}, Content: strings.NewReader("y")},
			{Version: FileVersion{Path: "blocker/z", Size: 1}, Content: strings.NewReader("z")},
		}
		res := a.WriteFiles(context.Background(), ws)
		for _, i := range []int{0, 2} {
			if !errors.Is(res[i].Err, ErrParentNotDir) {
				t.Errorf("%s: got %v, want %v", ws[i].Version.Path, res[i].Err, ErrParentNotDir)
			}
		}
		if res[1].Err != nil {
			t.Errorf("ok/y: got %v, want success", res[1].Err)
		}
		noTemps(t, fsys)
	})
}

// A batch that replaces indexed files while a user saves over one of them
// (after the applier's checks, before its exchange) keeps the user's save
// and applies the others.
func TestWriteFilesReplaceRacingSave(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		for _, p := range []string{"n/a", "n/b", "n/c"} {
			if _, err := writeVersion(t, a, idx, p, "old", false); err != nil {
				t.Fatal(err)
			}
		}
		a.cfg.TestOnlyBeforeRename = func(tmp, target string) error {
			if target == "n/b" {
				put(t, fsys, target, "the user's save")
			}
			return nil
		}
		var ws []FileWrite
		for _, p := range []string{"n/a", "n/b", "n/c"} {
			ws = append(ws, FileWrite{Version: FileVersion{Path: p, Size: 3, MTime: 1e18}, Content: strings.NewReader("new")})
		}
		res := a.WriteFiles(context.Background(), ws)
		for i, want := range []string{"new", "the user's save", "new"} {
			p := ws[i].Version.Path
			if got, _ := read(t, fsys, p); got != want {
				t.Errorf("%s: got %q, want %q", p, got, want)
			}
			if wantErr := want != "new"; errors.Is(res[i].Err, ErrLocalChange) != wantErr {
				t.Errorf("%s: got error %v, want ErrLocalChange %v", p, res[i].Err, wantErr)
			}
		}
		noTemps(t, fsys)
	})
}

// pathDir refuses nothing itself but passes every call to its FS with the
// joined path; without AtomicReplacer its atomic methods are unsupported.
func TestPathDirUnsupported(t *testing.T) {
	d := &pathDir{fs: plainFS{NewMemFS(MemFSConfig{})}, dir: "x"}
	if err := d.RenameNoReplace("a", "b"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("RenameNoReplace: got %v, want %v", err, errors.ErrUnsupported)
	}
	if err := d.Exchange("a", "b"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Exchange: got %v, want %v", err, errors.ErrUnsupported)
	}
	if _, err := d.Lstat("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat: got %v, want %v", err, fs.ErrNotExist)
	}
}
