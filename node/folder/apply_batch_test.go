package folder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestWriteFiles(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		put(t, fsys, "a/changed.md", "old")
		a := newApplier(t, fsys, idx, Folding{})
		var ws []FileWrite
		for i := range 20 {
			body := fmt.Sprintf("file %d", i)
			ws = append(ws, FileWrite{
				Version: FileVersion{Path: fmt.Sprintf("a/b%d/f%02d.md", i%3, i), Size: int64(len(body)), MTime: 1e18, Executable: i == 3},
				Content: strings.NewReader(body),
			})
		}
		// Not in the index: a local file the applier must not replace.
		ws = append(ws, FileWrite{Version: FileVersion{Path: "a/changed.md", Size: 3}, Content: strings.NewReader("new")})
		// Content shorter than promised.
		ws = append(ws, FileWrite{Version: FileVersion{Path: "a/short.md", Size: 10}, Content: strings.NewReader("abc")})
		res := a.WriteFiles(context.Background(), ws)
		for i := range 20 {
			if res[i].Err != nil {
				t.Fatalf("%s: %v", ws[i].Version.Path, res[i].Err)
			}
			got, ok := read(t, fsys, ws[i].Version.Path)
			if want := fmt.Sprintf("file %d", i); !ok || got != want {
				t.Fatalf("%s: got %q, want %q", ws[i].Version.Path, got, want)
			}
			if res[i].Outcome.Info.MTime != 1e18 {
				t.Fatalf("%s: mtime %d, want 1e18", ws[i].Version.Path, res[i].Outcome.Info.MTime)
			}
			if exec := res[i].Outcome.Info.Mode&0o100 != 0; exec != (i == 3) {
				t.Fatalf("%s: executable %v", ws[i].Version.Path, exec)
			}
		}
		if err := res[20].Err; !errors.Is(err, ErrLocalChange) {
			t.Fatalf("unindexed local file: got %v, want %v", err, ErrLocalChange)
		}
		if got, _ := read(t, fsys, "a/changed.md"); got != "old" {
			t.Fatalf("local file overwritten: %q", got)
		}
		if err := res[21].Err; !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("short content: got %v, want %v", err, ErrSizeMismatch)
		}
		for _, p := range tree(t, fsys) {
			if strings.Contains(p, TempPrefix) || strings.HasSuffix(p, "short.md") {
				t.Fatalf("left behind: %s", p)
			}
		}
	})
}

// TestWriteFilesDurableAfterCrash checks that a batch is durable when
// WriteFiles returns, and that a crash before the renames leaves no file
// under its final name.
func TestWriteFilesDurableAfterCrash(t *testing.T) {
	m := NewMemFS(MemFSConfig{})
	a := newApplier(t, m, MapIndex{}, Folding{})
	ws := []FileWrite{
		{Version: FileVersion{Path: "x/one.md", Size: 3}, Content: strings.NewReader("one")},
		{Version: FileVersion{Path: "x/two.md", Size: 3}, Content: strings.NewReader("two")},
	}
	for _, r := range a.WriteFiles(context.Background(), ws) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	m.Crash()
	for _, w := range ws {
		if _, ok := read(t, m, w.Version.Path); !ok {
			t.Fatalf("%s lost in a crash after WriteFiles returned", w.Version.Path)
		}
	}

	m2 := NewMemFS(MemFSConfig{})
	stop := errors.New("crash")
	a2, err := NewApplier(ApplierConfig{FS: m2, Index: MapIndex{}, TestOnlyBeforeRename: func(string, string) error { return stop }})
	if err != nil {
		t.Fatal(err)
	}
	ws = []FileWrite{{Version: FileVersion{Path: "y/three.md", Size: 5}, Content: strings.NewReader("three")}}
	a2.WriteFiles(context.Background(), ws)
	m2.Crash()
	if _, ok := read(t, m2, "y/three.md"); ok {
		t.Fatalf("a file appeared under its final name without its rename")
	}
}
