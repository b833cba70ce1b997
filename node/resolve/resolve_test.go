package resolve

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
)

// fakeVault is a folder in memory whose index is what is on disk when
// the test built it, and which records what Record was asked.
type fakeVault struct {
	fs       *folder.MemFS
	indexed  map[string]folder.FileInfo
	names    map[string]string
	locked   bool
	recorded [][]string
	held     bool
}

func (v *fakeVault) Folder() string { return "/home/a/notes" }
func (v *fakeVault) LockScans()     { v.locked = true }
func (v *fakeVault) UnlockScans()   { v.locked = false }
func (v *fakeVault) FS() folder.FS  { return v.fs }
func (v *fakeVault) IndexedFile(p string) (int64, int64, bool) {
	fi, ok := v.indexed[p]
	return fi.Size, fi.MTime, ok
}
func (v *fakeVault) DeviceName(short string) string { return v.names[short] }
func (v *fakeVault) ConflictCopies() []string {
	var out []string
	for p := range v.indexed {
		if protocol.IsConflictCopy(p) {
			out = append(out, p)
		}
	}
	return out
}
func (v *fakeVault) Record(_ context.Context, paths []string) (bool, error) {
	if !v.locked {
		return false, errors.New("recorded without the scans held")
	}
	v.recorded = append(v.recorded, paths)
	return v.held, nil
}

const (
	copyA = "todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md"
	copyB = "todo.conflict-ZyXwVuTs-20261130-054700-4d5e6f.md"
)

// newVault is a folder holding files (path -> content), all indexed.
func newVault(t *testing.T, files map[string]string) *fakeVault {
	t.Helper()
	v := &fakeVault{fs: folder.NewMemFS(folder.MemFSConfig{}), indexed: map[string]folder.FileInfo{}, names: map[string]string{"AbCdEfGh": "laptop"}}
	for p, b := range files {
		if i := strings.LastIndexByte(p, '/'); i > 0 {
			if err := v.fs.Mkdir(p[:i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				t.Fatal(err)
			}
		}
		writeFile(t, v.fs, p, b)
		fi, err := v.fs.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		v.indexed[p] = fi
	}
	return v
}

func writeFile(t *testing.T, fsys *folder.MemFS, p, b string) {
	t.Helper()
	dir := ""
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		dir = p[:i]
	}
	f, err := fsys.CreateTemp(dir, "t-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(f.Path(), p); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys folder.FS, p string) (string, bool) {
	t.Helper()
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func noSource(string) (io.ReadCloser, error) { return nil, errors.New("no file to take in this test") }

// TestKeepEach: each choice leaves the folder as the person asked, names
// both paths in the result, and records exactly the paths it changed.
func TestKeepEach(t *testing.T) {
	for _, c := range []struct {
		keep, take string
		want       map[string]string // path -> content after; "" = absent
		renamed    string
	}{
		{keep: KeepWinner, want: map[string]string{"todo.md": "winner", copyA: ""}},
		{keep: KeepCopy, want: map[string]string{"todo.md": "loser", copyA: ""}},
		{keep: KeepBoth, want: map[string]string{"todo.md": "winner", copyA: "", "todo (laptop).md": "loser"}, renamed: "todo (laptop).md"},
		{take: "/tmp/merged.md", want: map[string]string{"todo.md": "merged by hand", copyA: ""}},
	} {
		v := newVault(t, map[string]string{"todo.md": "winner", copyA: "loser"})
		open := func(p string) (io.ReadCloser, error) {
			if p != "/tmp/merged.md" {
				t.Errorf("opened %q", p)
			}
			return io.NopCloser(strings.NewReader("merged by hand")), nil
		}
		res, err := Run(context.Background(), v, copyA, api.ResolveRequest{Keep: c.keep, Take: c.take}, open)
		if err != nil {
			t.Fatalf("keep %q take %q: %v", c.keep, c.take, err)
		}
		kept := c.keep
		if c.take != "" {
			kept = KeepFile
		}
		if res.Copy != copyA || res.Of != "todo.md" || res.Kept != kept || res.Renamed != c.renamed || res.Folder != v.Folder() {
			t.Errorf("%s: result %+v", kept, res)
		}
		for p, want := range c.want {
			got, ok := readFile(t, v.fs, p)
			if want == "" && ok || want != "" && got != want {
				t.Errorf("%s: %s holds %q (present %v), want %q", kept, p, got, ok, want)
			}
		}
		var changed []string
		for p, want := range c.want {
			if p != "todo.md" || want != "winner" {
				changed = append(changed, p)
			}
		}
		slices.Sort(changed)
		if len(v.recorded) != 1 {
			t.Fatalf("%s: recorded %v, want one record", kept, v.recorded)
		}
		got := slices.Clone(v.recorded[0])
		slices.Sort(got)
		if !slices.Equal(got, changed) {
			t.Errorf("%s: recorded %v, want %v", kept, got, changed)
		}
		if v.locked {
			t.Errorf("%s: the scans are still held", kept)
		}
		entries, err := v.fs.ReadDir("")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name, folder.TempPrefix) {
				t.Errorf("%s: a temporary file was left: %s", kept, e.Name)
			}
		}
	}
}

// TestPickTheCopy: a path that is not a copy names its one copy; with two
// copies, or none, or a copy the index does not hold, nothing changes and
// the error says why.
func TestPickTheCopy(t *testing.T) {
	v := newVault(t, map[string]string{"todo.md": "winner", copyA: "loser"})
	if res, err := Run(context.Background(), v, "todo.md", api.ResolveRequest{Keep: KeepCopy}, noSource); err != nil || res.Copy != copyA {
		t.Fatalf("naming the file: %+v, %v", res, err)
	}

	v = newVault(t, map[string]string{"todo.md": "winner", copyA: "loser a", copyB: "loser b", "other.md": "x"})
	for _, c := range []struct {
		path  string
		class error
		says  string
	}{
		{"todo.md", api.ErrInvalid, "2 conflict copies"},
		{"other.md", api.ErrNotFound, "no conflict copy"},
		{"gone.conflict-AbCdEfGh-20261130-054657-1a2b3c.md", api.ErrNotFound, "no such conflict copy"},
	} {
		_, err := Run(context.Background(), v, c.path, api.ResolveRequest{Keep: KeepWinner}, noSource)
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.path, err, c.class, c.says)
		}
	}
	if len(v.recorded) != 0 {
		t.Errorf("recorded %v after refusals", v.recorded)
	}
}

// TestRefusals: a request that cannot be carried out as asked changes
// nothing: no choice or two, a copy whose name does not say what it is a
// copy of (only removing it works), a copy gone from disk, and a name
// that now holds a directory.
func TestRefusals(t *testing.T) {
	// A name this long may have been shortened: it cannot say what it is
	// a copy of (protocol.ParseConflictName).
	long := strings.Repeat("x", 210) + ".conflict-AbCdEfGh-20261130-054657-1a2b3c.md"
	for _, c := range []struct {
		name  string
		setup func(v *fakeVault)
		path  string
		req   api.ResolveRequest
		class error
	}{
		{"no choice", nil, copyA, api.ResolveRequest{}, api.ErrInvalid},
		{"both choices", nil, copyA, api.ResolveRequest{Keep: KeepCopy, Take: "/x"}, api.ErrInvalid},
		{"unknown choice", nil, copyA, api.ResolveRequest{Keep: "mine"}, api.ErrInvalid},
		{"copy of what", nil, long, api.ResolveRequest{Keep: KeepCopy}, api.ErrInvalid},
		{"copy edited since the scan", func(v *fakeVault) { writeFile(t, v.fs, copyA, "edited, not recorded") }, copyA, api.ResolveRequest{Keep: KeepWinner}, api.ErrConflict},
		{"name edited since the scan", func(v *fakeVault) { writeFile(t, v.fs, "todo.md", "edited, not recorded") }, copyA, api.ResolveRequest{Keep: KeepCopy}, api.ErrConflict},
		{"copy gone", func(v *fakeVault) { _ = v.fs.Remove(copyA) }, copyA, api.ResolveRequest{Keep: KeepCopy}, api.ErrConflict},
		{"name is a directory", func(v *fakeVault) {
			_ = v.fs.Remove("todo.md")
			_ = v.fs.Mkdir("todo.md", 0o755)
		}, copyA, api.ResolveRequest{Keep: KeepCopy}, api.ErrConflict},
	} {
		v := newVault(t, map[string]string{"todo.md": "winner", copyA: "loser", long: "loser"})
		if c.setup != nil {
			c.setup(v)
		}
		_, err := Run(context.Background(), v, c.path, c.req, noSource)
		if !errors.Is(err, c.class) {
			t.Errorf("%s: %v, want %v", c.name, err, c.class)
		}
		if len(v.recorded) != 0 {
			t.Errorf("%s: recorded %v", c.name, v.recorded)
		}
		if fi, err := v.fs.Lstat("todo.md"); err != nil || fi.Kind != folder.KindFile {
			continue
		}
		if got, ok := readFile(t, v.fs, "todo.md"); ok && got != "winner" && got != "edited, not recorded" {
			t.Errorf("%s: todo.md now holds %q", c.name, got)
		}
	}
}

// TestKeepBothNames: a kept copy is named after the device whose content
// it holds, by its short ID when the name cannot be part of a file name,
// and gets a number while the name is taken.
func TestKeepBothNames(t *testing.T) {
	v := newVault(t, map[string]string{"dir/todo.md": "winner", "dir/" + copyA: "loser", "dir/todo (laptop).md": "mine"})
	res, err := Run(context.Background(), v, "dir/"+copyA, api.ResolveRequest{Keep: KeepBoth}, noSource)
	if err != nil || res.Renamed != "dir/todo (laptop 2).md" {
		t.Fatalf("keep both beside a taken name: %+v, %v", res, err)
	}
	if got, _ := readFile(t, v.fs, "dir/todo (laptop).md"); got != "mine" {
		t.Errorf("the person's own file was overwritten: %q", got)
	}
	v = newVault(t, map[string]string{"todo.md": "winner", copyB: "loser"})
	if res, err := Run(context.Background(), v, copyB, api.ResolveRequest{Keep: KeepBoth}, noSource); err != nil || res.Renamed != "todo (another device).md" {
		t.Errorf("a device with no name: %+v, %v", res, err)
	}
	v = newVault(t, map[string]string{"todo.md": "winner", copyA: "loser"})
	v.names["AbCdEfGh"] = "a/b"
	if res, err := Run(context.Background(), v, copyA, api.ResolveRequest{Keep: KeepBoth}, noSource); err != nil || res.Renamed != "todo (another device).md" {
		t.Errorf("a device name with a slash: %+v, %v", res, err)
	}
}

// TestHeldIsSaid: when the device may not record yet, the folder is
// changed and the result says the record waits.
func TestHeldIsSaid(t *testing.T) {
	v := newVault(t, map[string]string{"todo.md": "winner", copyA: "loser"})
	v.held = true
	res, err := Run(context.Background(), v, copyA, api.ResolveRequest{Keep: KeepWinner}, noSource)
	if err != nil || !res.Held {
		t.Errorf("%+v, %v", res, err)
	}
}
