package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/history"
	"github.com/weftsync/weft/protocol"
)

// testClock is a settable clock for Config.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// historyNode runs a node without a watcher (changes are recorded by
// explicit scans) on a clock the test sets.
func historyNode(t *testing.T) (*Node, *vault, string, *testClock) {
	t.Helper()
	clk := &testClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, Now: clk.Now})
	v := n.vaultsNow()[0]
	// Wait for Run's first scan, so it cannot record a half-written edit.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		v.mu.Lock()
		done := v.scanned
		v.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first scan did not finish in 30 s")
		}
	}
	return n, v, folderPath, clk
}

// edit writes content at rel and records it with a scan, at time at.
func edit(t *testing.T, v *vault, clk *testClock, folderPath, rel string, content []byte, at time.Time) {
	t.Helper()
	clk.set(at)
	p := filepath.Join(folderPath, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if content == nil {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func readOr(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHistoryAndRestoreVersion(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	f := filepath.Join(folderPath, "notes.md")
	for i, s := range []string{"one\n", "two\n", "three\n"} {
		edit(t, v, clk, folderPath, "notes.md", []byte(s), base.Add(time.Duration(i+1)*time.Minute))
	}
	h, err := n.API().History(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, hv := range h.Versions {
		got = append(got, hv.State+" "+hv.Time.Format("15:04")+" "+hv.Content)
	}
	want := []string{"current 10:03 inline", "superseded 10:02 inline", "superseded 10:01 inline"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	if !h.Versions[0].OnDisk || h.Versions[2].OnDisk || !h.Versions[0].Self || h.Versions[0].Size != 6 {
		t.Fatalf("got newest %+v, oldest %+v; want the newest on disk, by this device, 6 bytes", h.Versions[0], h.Versions[2])
	}
	first := h.Versions[2].ID

	clk.set(base.Add(10 * time.Minute))
	res, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: f, Version: first})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Action != "restore" || res.Changes[0].From != first || res.Changes[0].Version == "" {
		t.Fatalf("got changes %+v, want one restore of %s recorded as a new version", res.Changes, first)
	}
	if got := readOr(t, f); got != "one\n" {
		t.Fatalf("got %q on disk after restoring the first version, want %q", got, "one\n")
	}
	h, err = n.API().History(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Versions) != 4 || h.Versions[0].ID != res.Changes[0].Version || h.Versions[0].State != "current" ||
		!slices.Equal(h.Versions[0].Supersedes, []string{h.Versions[1].ID}) || h.Versions[1].State != "superseded" {
		t.Fatalf("history after restore: %+v; want a 4th version, current, superseding the third", h.Versions)
	}
	if h.Versions[0].Hash != h.Versions[3].Hash {
		t.Fatalf("restored version hash %s, want the first version's %s", h.Versions[0].Hash, h.Versions[3].Hash)
	}
	// A scan now finds nothing: the restore was recorded like a local edit.
	if r, err := v.scan(context.Background(), nil); err != nil || len(r.Changes) != 0 {
		t.Fatalf("scan after restore: %v changes, err %v; want none", len(r.Changes), err)
	}
	// Restoring what is already there changes nothing.
	res, err = n.API().Restore(context.Background(), api.RestoreRequest{Path: f, Version: first})
	if err != nil || len(res.Changes) != 0 {
		t.Fatalf("restoring the content on disk again: got %+v, %v; want no change", res.Changes, err)
	}
}

func TestRestoreAtAndDeletion(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	f := filepath.Join(folderPath, "a.txt")
	edit(t, v, clk, folderPath, "a.txt", []byte("v1"), base.Add(1*time.Minute))
	edit(t, v, clk, folderPath, "a.txt", []byte("v2"), base.Add(2*time.Minute))
	edit(t, v, clk, folderPath, "a.txt", nil, base.Add(3*time.Minute))
	clk.set(base.Add(time.Hour))

	tests := []struct {
		at   string
		want string
	}{
		{"2026-01-01T10:01:30Z", "v1"},
		{"-58m", "v2"}, // 10:02
		{"2026-01-01T10:00:30Z", "<absent>"},
		{"2026-01-01T10:02:59Z", "v2"},
	}
	for _, tt := range tests {
		if _, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: f, At: tt.at}); err != nil {
			t.Fatalf("restore --at %s: %v", tt.at, err)
		}
		if got := readOr(t, f); got != tt.want {
			t.Fatalf("restore --at %s: got %q, want %q", tt.at, got, tt.want)
		}
	}
	// Restoring the deletion deletes.
	h, err := n.API().History(f)
	if err != nil {
		t.Fatal(err)
	}
	var del string
	for _, hv := range h.Versions {
		if hv.Kind == "deletion" {
			del = hv.ID
		}
	}
	res, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: f, Version: del})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Action != "delete" {
		t.Fatalf("restoring the deletion: got %+v, %v; want one delete", res, err)
	}
	if got := readOr(t, f); got != "<absent>" {
		t.Fatalf("after restoring the deletion: got %q, want absent", got)
	}
	v.mu.Lock()
	heads := v.view.Graph.Heads("a.txt")
	v.mu.Unlock()
	if len(heads) != 1 || heads[0].Kind != protocol.KindDeletion {
		t.Fatalf("heads after restoring the deletion: %v; want one deletion", heads)
	}
}

func TestRestoreAll(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	edit(t, v, clk, folderPath, "keep.txt", []byte("same"), base.Add(time.Minute))
	edit(t, v, clk, folderPath, "docs/a.txt", []byte("a old"), base.Add(time.Minute))
	edit(t, v, clk, folderPath, "docs/b.txt", []byte("b old"), base.Add(time.Minute))
	at := base.Add(2 * time.Minute).Format(time.RFC3339)
	edit(t, v, clk, folderPath, "docs/a.txt", []byte("a new"), base.Add(3*time.Minute))
	edit(t, v, clk, folderPath, "docs", nil, base.Add(4*time.Minute))
	edit(t, v, clk, folderPath, "new/c.txt", []byte("c"), base.Add(5*time.Minute))
	clk.set(base.Add(time.Hour))

	before, err := tree(folderPath)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := n.API().Restore(context.Background(), api.RestoreRequest{All: true, At: at, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range dry.Changes {
		got = append(got, c.Action+" "+c.Path)
	}
	want := []string{"restore docs", "restore docs/a.txt", "restore docs/b.txt", "delete new/c.txt", "delete new"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("dry run (-want +got):\n%s", diff)
	}
	if after, _ := tree(folderPath); !cmp.Equal(before, after) {
		t.Fatalf("dry run changed the folder: %s", cmp.Diff(before, after))
	}

	res, err := n.API().Restore(context.Background(), api.RestoreRequest{All: true, At: at})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != len(want) {
		t.Fatalf("got %d changes, want %d: %+v", len(res.Changes), len(want), res.Changes)
	}
	after, err := tree(folderPath)
	if err != nil {
		t.Fatal(err)
	}
	wantTree := map[string]string{"keep.txt": "same", "docs": "dir", "docs/a.txt": "a old", "docs/b.txt": "b old"}
	if diff := cmp.Diff(wantTree, after); diff != "" {
		t.Fatalf("folder after restore --all (-want +got):\n%s", diff)
	}
	// Every restored path settled on one head, written by this device.
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range []string{"docs", "docs/a.txt", "docs/b.txt", "new", "new/c.txt"} {
		hs := v.view.Graph.Heads(p)
		if len(hs) != 1 || hs[0].ID.Author != n.ID() {
			t.Errorf("heads of %s: %v; want one, by this device", p, hs)
		}
	}
}

func TestRestoreRefusesLocalChange(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	f := filepath.Join(folderPath, "a.txt")
	edit(t, v, clk, folderPath, "a.txt", []byte("v1"), base.Add(time.Minute))
	edit(t, v, clk, folderPath, "a.txt", []byte("v2"), base.Add(2*time.Minute))
	// The user edits without a scan recording it.
	if err := os.WriteFile(f, []byte("unrecorded edit"), 0o644); err != nil {
		t.Fatal(err)
	}
	head := v.db.Head(n.ID()).Seq
	_, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: f, At: base.Add(90 * time.Second).Format(time.RFC3339)})
	if !errors.Is(err, history.ErrChangedSinceScan) {
		t.Fatalf("got %v, want an error wrapping history.ErrChangedSinceScan", err)
	}
	if got := readOr(t, f); got != "unrecorded edit" {
		t.Fatalf("got %q on disk, want the user's edit kept", got)
	}
	if got := v.db.Head(n.ID()).Seq; got != head {
		t.Fatalf("log head %d after a refused restore, want %d", got, head)
	}
}

func TestRestoreUnavailableContentChangesNothing(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	if _, err := n.API().SetVersionPolicy(context.Background(), folderPath, api.VersionPolicy{Off: true}); err != nil {
		t.Fatal(err)
	}
	base := clk.Now()
	f := filepath.Join(folderPath, "big.bin")
	big := bytes.Repeat([]byte("a line of a large file\n"), 4000) // chunked, not inline
	edit(t, v, clk, folderPath, "big.bin", big, base.Add(time.Minute))
	edit(t, v, clk, folderPath, "big.bin", []byte("small now"), base.Add(2*time.Minute))
	h, err := n.API().History(f)
	if err != nil {
		t.Fatal(err)
	}
	if h.Versions[1].Content != "none" {
		t.Fatalf("got content %q for the overwritten large version, want none (not kept, no device connected)", h.Versions[1].Content)
	}
	head := v.db.Head(n.ID()).Seq
	_, err = n.API().Restore(context.Background(), api.RestoreRequest{Path: f, Version: h.Versions[1].ID})
	if !errors.Is(err, history.ErrContentUnavailable) {
		t.Fatalf("got %v, want an error wrapping history.ErrContentUnavailable", err)
	}
	if got := readOr(t, f); got != "small now" {
		t.Fatalf("got %q on disk, want it unchanged", got)
	}
	if got := v.db.Head(n.ID()).Seq; got != head {
		t.Fatalf("log head %d after a failed restore, want %d", got, head)
	}
}

func TestRestoreErrors(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	edit(t, v, clk, folderPath, "a.txt", []byte("v1"), clk.Now())
	f := filepath.Join(folderPath, "a.txt")
	tests := []struct {
		name string
		req  api.RestoreRequest
		want error
	}{
		{"no version or time", api.RestoreRequest{Path: f}, history.ErrBadRestore},
		{"version and time", api.RestoreRequest{Path: f, Version: "x/1/0", At: "-1h"}, history.ErrBadRestore},
		{"all without time", api.RestoreRequest{All: true}, history.ErrBadRestore},
		{"no path", api.RestoreRequest{At: "-1h"}, history.ErrBadRestore},
		{"bad time", api.RestoreRequest{Path: f, At: "soon"}, history.ErrBadRestore},
		{"unknown version", api.RestoreRequest{Path: f, Version: "x/1/0"}, history.ErrNoSuchVersion},
		{"unknown path", api.RestoreRequest{Path: filepath.Join(folderPath, "nope"), At: "-1h"}, history.ErrNoHistory},
		{"outside", api.RestoreRequest{Path: "/", At: "-1h"}, errNotInFolder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := n.API().Restore(context.Background(), tt.req); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want an error wrapping %v", err, tt.want)
			}
		})
	}
	if _, err := n.API().History(filepath.Join(folderPath, "nope")); !errors.Is(err, history.ErrNoHistory) {
		t.Fatalf("history of an unknown path: got %v, want history.ErrNoHistory", err)
	}
}

// tree reads a folder's files and directories (not .weft) into a map.
func tree(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case rel == ".weft" || filepath.Base(rel) == ".weftignore":
			return filepath.SkipDir
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	return out, err
}
