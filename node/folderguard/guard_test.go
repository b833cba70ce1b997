package folderguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

// fakeFolder is a Folder over a real directory, with what the vault knows
// of it in fields.
type fakeFolder struct {
	dir    string
	fs     folder.FS
	marked bool
	holds  int
	marks  int
}

func newFakeFolder(t *testing.T) *fakeFolder {
	dir := t.TempDir()
	fsys, err := folder.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeFolder{dir: dir, fs: fsys}
}

func (f *fakeFolder) Dir() string           { return f.dir }
func (f *fakeFolder) FS() folder.FS         { return f.fs }
func (f *fakeFolder) VaultID() string       { return "vault-a" }
func (f *fakeFolder) Marked() (bool, error) { return f.marked, nil }
func (f *fakeFolder) Holds() int            { return f.holds }
func (f *fakeFolder) Mark() error {
	f.marks++
	f.marked = true
	return folder.WriteMarker(f.fs, "vault-a")
}

func TestCheck(t *testing.T) {
	t.Run("a new folder is marked", func(t *testing.T) {
		f := newFakeFolder(t)
		if code, msg := Check(f); code != "" || f.marks != 1 {
			t.Fatalf("%s %s, %d marks; want it marked and running", code, msg, f.marks)
		}
		if code, _ := Check(f); code != "" || f.marks != 1 {
			t.Fatalf("the marked folder: %s, %d marks; want it running, marked once", code, f.marks)
		}
	})
	t.Run("a marker gone", func(t *testing.T) {
		f := newFakeFolder(t)
		f.marked = true
		if code, msg := Check(f); code != api.CodeMarkerMissing || !strings.Contains(msg, "looks replaced") || f.marks != 0 {
			t.Fatalf("%s %q, %d marks; want marker-missing and no new marker", code, msg, f.marks)
		}
	})
	t.Run("another vault's folder", func(t *testing.T) {
		f := newFakeFolder(t)
		if err := folder.WriteMarker(f.fs, "vault-b"); err != nil {
			t.Fatal(err)
		}
		if code, msg := Check(f); code != api.CodeMarkerForeign || !strings.Contains(msg, "vault-b") {
			t.Fatalf("%s %q, want marker-foreign naming vault-b", code, msg)
		}
	})
	t.Run("an empty folder where files were", func(t *testing.T) {
		for _, tc := range []struct {
			holds int
			says  string
		}{{12, "weft last saw 12 files"}, {-1, "log holds files"}} {
			f := newFakeFolder(t)
			f.holds = tc.holds
			if code, msg := Check(f); code != api.CodeMarkerMissing || !strings.Contains(msg, tc.says) || f.marks != 0 {
				t.Fatalf("holds %d: %s %q, %d marks; want marker-missing saying %q", tc.holds, code, msg, f.marks, tc.says)
			}
			// The same folder with a file in it looks like itself.
			if err := os.WriteFile(filepath.Join(f.dir, "note.md"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, _ := Check(f); code != "" || f.marks != 1 {
				t.Fatalf("holds %d with a file: %s, %d marks; want it marked", tc.holds, code, f.marks)
			}
		}
	})
	t.Run("a folder gone", func(t *testing.T) {
		f := newFakeFolder(t)
		f.dir = filepath.Join(f.dir, "unmounted")
		if code, msg := Check(f); code != api.CodeMarkerMissing || !strings.Contains(msg, "is gone") {
			t.Fatalf("%s %q, want marker-missing: gone", code, msg)
		}
	})
}

func resumedSignalled(g *Guard) bool {
	select {
	case <-g.Resumed():
		return true
	default:
		return false
	}
}

func TestGuardSaysEachChangeOnce(t *testing.T) {
	g := New()
	t0 := time.Unix(1_800_000_000, 0)
	if c, _ := g.Note("", "", t0); c != Same {
		t.Fatalf("a running folder checked: %v, want Same", c)
	}
	if c, _ := g.Note(api.CodeMarkerMissing, "gone", t0); c != Stopped {
		t.Fatalf("stop: %v", c)
	}
	if c, _ := g.Note(api.CodeMarkerMissing, "gone, reworded", t0.Add(time.Minute)); c != Same {
		t.Fatalf("the same stop reworded: %v, want Same", c)
	}
	st, ok := g.Stopped()
	if !ok || st.Message != "gone, reworded" || !st.Since.Equal(t0) {
		t.Fatalf("stop %+v, want the new words since the first stop", st)
	}
	if c, _ := g.Note(api.CodeUnreadable, "unreadable", t0.Add(2*time.Minute)); c != Stopped {
		t.Fatalf("a stop for another reason: %v, want Stopped", c)
	}
	if resumedSignalled(g) {
		t.Fatal("resumed signalled while stopped")
	}
	c, was := g.Note("", "", t0.Add(3*time.Minute))
	if c != Resumed || was.Code != api.CodeUnreadable || !resumedSignalled(g) {
		t.Fatalf("resume: %v (was %+v), want Resumed from unreadable, signalled", c, was)
	}
	if _, ok := g.Stopped(); ok {
		t.Fatal("still stopped after the resume")
	}
}
