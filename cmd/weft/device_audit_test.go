package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/member"
)

// Acceptance checks of issue 4 ("a device") with real processes, for what
// the other end-to-end tests leave out: a well-formed code that was never
// issued, `invite --qr`, SIGINT; the executable bit, mtime, .weftignore
// and symlinks carried between devices; and the progress lines of a long
// first sync when standard output is not a terminal.

// devicesOf returns the device IDs `weft devices` lists on d.
func devicesOf(t *testing.T, d *device) []string {
	t.Helper()
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(d.must("devices")), "\n")[1:] {
		if f := strings.Fields(l); len(f) >= 2 {
			ids = append(ids, f[1])
		}
	}
	return ids
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}

// TestAuditWrongCodeChangesNothing presents a code that parses, passes its
// checksum and names the right inviter at the right addresses, but whose
// secret the inviter never issued: the join fails with a clear error and
// neither side changes. Then `invite --qr` draws a QR code and still ends
// with the code alone on its last line, which joins; and the agent stops
// with exit 0 on SIGINT.
func TestAuditWrongCodeChangesNothing(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	a.up()

	real, err := member.ParseInvite(lastLine(a.must("invite")))
	if err != nil {
		t.Fatal(err)
	}
	forged := real
	if _, err := rand.Read(forged.Secret[:]); err != nil {
		t.Fatal(err)
	}
	b := newDevice(t, "b")
	_, err = b.run("join", forged.String(), b.folder)
	if err == nil || !strings.Contains(err.Error(), "no such invite code") {
		t.Fatalf("join with a code never issued: got %v, want \"no such invite code\"", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(b.home, "vaults")); len(entries) > 0 {
		t.Fatalf("a failed join left %d vaults in the joining home", len(entries))
	}
	if _, err := os.Stat(b.folder); err == nil {
		t.Fatalf("a failed join created the folder %s", b.folder)
	}
	if ids := devicesOf(t, a); len(ids) != 1 {
		t.Fatalf("after a failed join the inviter lists %v, want itself alone", ids)
	}

	out := a.must("invite", "--qr")
	if !strings.ContainsAny(out, "█▀▄") {
		t.Fatalf("invite --qr drew no QR code:\n%s", out)
	}
	code := lastLine(out)
	if _, err := member.ParseInvite(code); err != nil {
		t.Fatalf("the last line of invite --qr is not a code: %q: %v", code, err)
	}
	b.must("join", code, b.folder)
	if ids := devicesOf(t, a); len(ids) != 2 {
		t.Fatalf("after the join the inviter lists %v, want two devices", ids)
	}

	_ = a.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("agent exit after SIGINT: %v\n%s", err, a.logTail())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not stop within 30s of SIGINT")
	}
	a.cmd = nil
	a.logf.Close()
}

// TestAuditMetadataIgnoreAndLinks checks what travels with a file and what
// does not: the executable bit and the mtime (to the nanosecond) arrive;
// paths matched by .weftignore do not (.weftignore itself does); symlinks
// arrive as links with their target, dangling or not, and a link to a
// directory outside the folder is never followed: nothing behind it is
// recorded, and the receiver writes nothing outside its folder.
func TestAuditMetadataIgnoreAndLinks(t *testing.T) {
	a, b := pair(t)
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 123456789, time.UTC)
	// Each file gets its mode and mtime before it enters the folder (a
	// rename), so a's watcher never sees it without them: an mtime-only
	// change made later would not be published (docs/sync.md).
	staged := func(name string, data []byte, mode os.FileMode) {
		tmp := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(tmp, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(tmp, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(a.folder, name)); err != nil {
			t.Fatal(err)
		}
	}
	staged("run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	staged("plain.md", []byte("plain"), 0o644)
	staged(".weftignore", []byte("*.log\nbuild/\n"), 0o644) // whole before what it ignores
	a.write("app.log", []byte("ignored"))
	a.write("build/out.bin", []byte("ignored too"))
	// "outside" sits beside a's folder, so "../outside" from the folder
	// root leads out of it; beside b's folder there is no such directory.
	outside := filepath.Join(filepath.Dir(a.folder), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("not synced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(a.folder, "ext")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere/x", filepath.Join(a.folder, "dangling")); err != nil {
		t.Fatal(err)
	}
	b.up()
	want := map[string]string{
		"run.sh":      "file:#!/bin/sh\necho hi\n",
		"plain.md":    "file:plain",
		".weftignore": "file:*.log\nbuild/\n",
		"ext":         "link:../outside",
		"dangling":    "link:nowhere/x",
	}
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := tree(b.folder)
		ok := err == nil
		for p, v := range want {
			ok = ok && m[p] == v
		}
		if ok {
			if len(m) != len(want) {
				t.Fatalf("b holds %v, want exactly %v", m, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b holds %v (%v), want %v\n%s", m, err, want, b.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	fi, err := os.Stat(filepath.Join(b.folder, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("run.sh arrived with mode %v, want the executable bits", fi.Mode().Perm())
	}
	fi, err = os.Stat(filepath.Join(b.folder, "plain.md"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 != 0 {
		t.Errorf("plain.md arrived with mode %v, want no executable bit", fi.Mode().Perm())
	}
	if !fi.ModTime().Equal(mtime) {
		t.Errorf("plain.md arrived with mtime %v, want %v", fi.ModTime().UTC(), mtime)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(b.folder), "outside")); !os.IsNotExist(err) {
		t.Errorf("something was written beside b's folder, through the link: %v", err)
	}
	waitStatus(t, b, time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.State != "in-sync" || len(f.Errors) != 0 {
			return fmt.Errorf("state %s, errors %v", f.State, f.Errors)
		}
		return nil
	})
	if out, err := a.run("history", filepath.Join(a.folder, "ext", "secret.txt")); err == nil {
		t.Errorf("a recorded a file behind the link ext: %s", out)
	}
}

// TestAuditFirstSyncShowsProgress checks the plain progress lines of a long
// first sync. So that the sync stays long whatever the machine's speed, a
// records 60 files and then changes each on disk without recording it:
// b learns of 60 files it cannot fetch (a serves no chunk of a changed
// file), which is as long a sync as any.
func TestAuditFirstSyncShowsProgress(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.upArgs = []string{"--mdns=false", "--settle", "10m"} // a records only on `weft scan`
	a.must("init", a.folder)
	a.up()
	a.must("folder", "versions", a.folder, "--off") // its version store would serve the recorded chunks
	const n = 60
	for i := range n {
		a.write(fmt.Sprintf("f%02d.bin", i), []byte(strings.Repeat(fmt.Sprintf("version 1 of %02d;", i), 1000)))
	}
	a.must("scan")
	for i := range n {
		a.write(fmt.Sprintf("f%02d.bin", i), []byte(strings.Repeat(fmt.Sprintf("version 2 of %02d;", i), 1000)))
	}
	b.must("join", lastLine(a.must("invite")), b.folder)
	lines := b.up()
	deadline := time.After(time.Minute)
	for {
		select {
		case l := <-lines:
			// "syncing: D of T items applied, F files (B) in the folder;
			// RATE": T counts the 60 files (and whatever else is pending),
			// RATE says the rate once two samples are in.
			var done, total, files int
			if _, err := fmt.Sscanf(l, "syncing: %d of %d items applied, %d files", &done, &total, &files); err == nil &&
				done == 0 && total >= n && strings.Contains(l, " in the folder; ") &&
				(strings.HasSuffix(l, "; measuring the rate") || strings.Contains(l, " items/s, ")) {
				return
			}
			t.Logf("other output: %q", l)
		case <-deadline:
			t.Fatalf("no progress line after a minute\n%s", b.logTail())
		}
	}
}
