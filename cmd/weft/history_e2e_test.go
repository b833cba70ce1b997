package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// TestRestoreFirstVersion edits a file three times on a, restores the
// first version with `weft restore --version`, and checks that b receives
// it as a new version.
func TestRestoreFirstVersion(t *testing.T) {
	a, b := pair(t)
	b.up()
	path := filepath.Join(a.folder, "notes.md")
	for _, s := range []string{"first draft\n", "second draft\n", "third draft\n"} {
		a.write("notes.md", []byte(s))
		a.must("scan", path) // do not depend on the watcher being up yet
		waitSame(t, a, b, time.Minute, func(m map[string]string) error {
			if m["notes.md"] != "file:"+s {
				return fmt.Errorf("notes.md is %q, want %q", m["notes.md"], s)
			}
			return nil
		})
	}
	h := history(t, a, path)
	if len(h.Versions) != 3 || h.Versions[0].State != "current" {
		t.Fatalf("history of notes.md: %+v; want 3 versions, the newest current", h.Versions)
	}
	first := h.Versions[2].ID
	human := a.must("history", path)
	if !strings.Contains(human, first) || !strings.Contains(human, "3 versions") {
		t.Fatalf("weft history output lacks the first version %s:\n%s", first, human)
	}

	out := a.must("restore", path, "--version", first)
	if !strings.Contains(out, "restored") || !strings.Contains(out, first) {
		t.Fatalf("weft restore output: %q; want it to name the restored version %s", out, first)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["notes.md"] != "file:first draft\n" {
			return fmt.Errorf("notes.md is %q, want the first draft", m["notes.md"])
		}
		return nil
	})
	hb := history(t, b, filepath.Join(b.folder, "notes.md"))
	if len(hb.Versions) != 4 || hb.Versions[0].Hash != hb.Versions[3].Hash || hb.Versions[0].AuthorShort != h.Versions[0].AuthorShort {
		t.Fatalf("history on b: %+v; want 4 versions, the newest by a with the first's content", hb.Versions)
	}
}

// TestRestoreUnavailableFails checks that restoring a version whose chunks
// no device holds any more fails with a clear error and changes nothing,
// and that a bad invocation exits 2.
func TestRestoreUnavailableFails(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	a.up()
	a.must("folder", "versions", a.folder, "--off") // no local copy: nobody holds the old content
	path := filepath.Join(a.folder, "big.bin")
	a.write("big.bin", bytes.Repeat([]byte("large file line\n"), 2000))
	a.must("scan", path) // do not depend on the watcher being up yet
	a.write("big.bin", []byte("small"))
	a.must("scan", path)
	waitHistory(t, a, path, 2)
	h := history(t, a, path)
	_, err := a.run("restore", path, "--version", h.Versions[1].ID)
	if err == nil || !strings.Contains(err.Error(), "not available") || !strings.Contains(err.Error(), "nothing was restored") {
		t.Fatalf("restoring content no device holds: got %v, want a clear error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "small" {
		t.Fatalf("big.bin is %q after a failed restore, want it unchanged", b)
	}
	if got := len(history(t, a, path).Versions); got != 2 {
		t.Fatalf("%d versions after a failed restore, want 2", got)
	}
	cmd := a.command("restore", path)
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Fatalf("restore without --version or --at: got %v, want exit code 2", err)
	}
}

func history(t *testing.T, d *device, path string) api.History {
	t.Helper()
	var h api.History
	if err := json.Unmarshal([]byte(d.must("history", path, "--json")), &h); err != nil {
		t.Fatalf("history json: %v", err)
	}
	return h
}

// waitHistory waits until d knows n versions of path.
func waitHistory(t *testing.T, d *device, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := d.run("history", path, "--json")
		var h api.History
		if err == nil && json.Unmarshal([]byte(out), &h) == nil && len(h.Versions) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d versions of %s not known after a minute: %v %s", d.name, n, path, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
