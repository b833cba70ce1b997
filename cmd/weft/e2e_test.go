package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

// These tests run real weft processes: the binary is built once in
// TestMain, each device gets its own home, and every agent listens on
// 127.0.0.1 only with LAN discovery off.

var weftBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weft-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weftBin = filepath.Join(dir, "weft")
	args := []string{"build", "-o", weftBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building weft: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// device is one weft home and folder, with its agent when running.
type device struct {
	t      *testing.T
	name   string
	home   string
	folder string
	cmd    *exec.Cmd
	logf   *os.File
	done   chan error
	netns  string   // run every command inside this network namespace
	upArgs []string // extra arguments for `weft up`
	logDir string   // where the agent's log goes; the home's parent when empty
	// watchLimit, when set, runs the agent in a user namespace of its own
	// whose inotify watch limit is this (never the machine's).
	watchLimit int
}

// logPath is the agent's log file.
func (d *device) logPath() string {
	dir := d.logDir
	if dir == "" {
		dir = filepath.Dir(d.home)
	}
	return filepath.Join(dir, d.name+".log")
}

// command builds a weft command line for this device, inside its network
// namespace if it has one.
func (d *device) command(args ...string) *exec.Cmd {
	args = append([]string{"--home", d.home}, args...)
	if d.netns != "" {
		return exec.Command("ip", append([]string{"netns", "exec", d.netns, weftBin}, args...)...)
	}
	return exec.Command(weftBin, args...)
}

func newDevice(t *testing.T, name string) *device {
	t.Helper()
	dir := t.TempDir()
	return &device{t: t, name: name, home: filepath.Join(dir, "home"), folder: filepath.Join(dir, "folder")}
}

// run runs a CLI command against this device's home and returns stdout.
func (d *device) run(args ...string) (string, error) {
	cmd := d.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("weft %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (d *device) must(args ...string) string {
	d.t.Helper()
	out, err := d.run(args...)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

// up starts the agent and waits for its ready line. It returns the lines
// the agent prints on standard output after that line (a pipe: not a
// terminal), as many as fit a buffer of 1,000; most callers ignore them.
func (d *device) up() <-chan string {
	t := d.t
	t.Helper()
	f, err := os.OpenFile(d.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d.logf = f
	args := []string{"up", "--listen", "/ip4/127.0.0.1/tcp/0", "--debug"}
	if len(d.upArgs) > 0 {
		args = append(args, d.upArgs...)
	} else {
		args = append(args, "--mdns=false")
	}
	cmd := d.command(args...)
	if d.watchLimit > 0 {
		cmd = exec.Command("unshare", append([]string{"--user", "--map-root-user", "sh", "-c",
			fmt.Sprintf(`echo %d > /proc/sys/user/max_inotify_watches && exec "$@"`, d.watchLimit), "sh", weftBin, "--home", d.home}, args...)...)
	}
	cmd.Stderr = f
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd = cmd
	d.done = make(chan error, 1)
	lines := make(chan string, 1000)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		isReady := false
		for sc.Scan() {
			if !isReady && strings.HasPrefix(sc.Text(), "ready ") {
				isReady = true
				close(ready)
				continue
			}
			select {
			case lines <- sc.Text():
			default:
			}
		}
		d.done <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-d.done:
		t.Fatalf("%s: agent exited before ready: %v\n%s", d.name, err, d.logTail())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: agent not ready after 60s\n%s", d.name, d.logTail())
	}
	t.Cleanup(func() { d.stop() })
	return lines
}

// stop ends the agent with SIGTERM and checks it exits 0.
func (d *device) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			d.t.Errorf("%s: agent exit after SIGTERM: %v\n%s", d.name, err, d.logTail())
		}
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		d.t.Errorf("%s: agent did not stop within 30s of SIGTERM", d.name)
	}
	d.cmd = nil
	d.logf.Close()
}

// kill ends the agent with SIGKILL.
func (d *device) kill() {
	_ = d.cmd.Process.Kill()
	<-d.done
	d.cmd = nil
	d.logf.Close()
}

func (d *device) logTail() string {
	b, _ := os.ReadFile(d.logPath())
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func (d *device) status() api.Status {
	d.t.Helper()
	var st api.Status
	if err := json.Unmarshal([]byte(d.must("status", "--json")), &st); err != nil {
		d.t.Fatalf("status json: %v", err)
	}
	return st
}

func (d *device) write(rel string, data []byte) {
	d.t.Helper()
	p := filepath.Join(d.folder, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// writeAtomic puts data at rel the way an editor's safe save does: written
// beside the folder, then renamed into it, so the path never shows a
// partial or empty file. Tests that watch b for torn files write a's files
// this way: a's agent may record, as a legitimate version, an os.WriteFile
// caught between its truncate and its write.
func (d *device) writeAtomic(rel string, data []byte) {
	d.t.Helper()
	p := filepath.Join(d.folder, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	f, err := os.CreateTemp(filepath.Dir(d.home), "save-")
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		d.t.Fatal(err)
	}
	if err := f.Chmod(0o644); err != nil {
		d.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		d.t.Fatal(err)
	}
}

// pair creates a vault on a, runs a's agent, and joins b to it.
func pair(t *testing.T) (a, b *device) {
	t.Helper()
	a, b = newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder)
	a.up()
	out := a.must("invite")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	code := lines[len(lines)-1]
	b.must("join", code, b.folder)
	return a, b
}

// tree reads every file, directory and symlink under root (except weft's
// own .weft directory) into a map.
func tree(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel == ".weft" || strings.HasPrefix(rel, ".weft/") {
			return filepath.SkipDir
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		case e.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file:" + string(b)
		}
		return nil
	})
	return out, err
}

// waitSame waits until both folders hold the same tree and it satisfies
// check (nil: any tree).
func waitSame(t *testing.T, a, b *device, limit time.Duration, check func(map[string]string) error) map[string]string {
	t.Helper()
	deadline := time.Now().Add(limit)
	var why string
	for time.Now().Before(deadline) {
		ta, errA := tree(a.folder)
		tb, errB := tree(b.folder)
		switch {
		case errA != nil || errB != nil:
			why = fmt.Sprint(errA, errB)
		case !sameTree(ta, tb):
			why = diffTree(ta, tb)
		default:
			if check == nil {
				return ta
			}
			if err := check(ta); err != nil {
				why = err.Error()
			} else {
				return ta
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("folders not the same after %s: %s\n--- a log:\n%s\n--- b log:\n%s", limit, why, a.logTail(), b.logTail())
	return nil
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func diffTree(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if bv, ok := b[k]; !ok {
			d = append(d, "only in a: "+k)
		} else if bv != v {
			d = append(d, "differs: "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "only in b: "+k)
		}
	}
	if len(d) > 10 {
		d = append(d[:10], fmt.Sprintf("... %d more", len(d)-10))
	}
	return strings.Join(d, "; ")
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestSyncLifecycle(t *testing.T) {
	a, b := pair(t)
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string][]byte{}
	for i := range 500 {
		p := fmt.Sprintf("dir%02d/note%03d.md", i%10, i)
		size := 100 + r.IntN(3000)
		if i%50 == 0 {
			size = 100<<10 + r.IntN(200<<10) // a few chunked files
		}
		want[p] = randBytes(r, size)
		a.write(p, want[p])
	}
	b.up()
	waitSame(t, a, b, 2*time.Minute, func(m map[string]string) error {
		for p, data := range want {
			if m[p] != "file:"+string(data) {
				return fmt.Errorf("%s missing or different", p)
			}
		}
		return nil
	})

	// Edits, deletions, new directories and a symlink, from b this time.
	b.write("dir01/note001.md", []byte("edited on b"))
	b.write("newdir/sub/fresh.md", []byte("new on b"))
	if err := os.Remove(filepath.Join(b.folder, "dir02", "note002.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../dir03/note003.md", filepath.Join(b.folder, "newdir", "link.md")); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["dir01/note001.md"] != "file:edited on b" || m["newdir/sub/fresh.md"] != "file:new on b" {
			return fmt.Errorf("edits not there yet")
		}
		if _, ok := m["dir02/note002.md"]; ok {
			return fmt.Errorf("deletion not there yet")
		}
		if m["newdir/link.md"] != "link:../dir03/note003.md" {
			return fmt.Errorf("symlink not there yet")
		}
		return nil
	})
	// And back from a: delete a whole directory.
	if err := os.RemoveAll(filepath.Join(a.folder, "dir09")); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if _, ok := m["dir09"]; ok {
			return fmt.Errorf("dir09 still there")
		}
		return nil
	})

	st := b.status()
	if len(st.Folders) != 1 || st.Folders[0].Files == 0 || len(st.Peers) != 1 {
		t.Fatalf("status: got %+v", st)
	}
	if p := st.Peers[0]; p.Connection != "lan" || p.BytesReceived == 0 {
		t.Fatalf("peer status: got %+v, want a lan connection with bytes received", p)
	}
}

func TestRenameCostsNoTransfer(t *testing.T) {
	a, b := pair(t)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20 {
		a.write(fmt.Sprintf("old/f%02d.bin", i), randBytes(r, 64<<10+r.IntN(64<<10)))
	}
	b.up()
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if len(m) < 21 {
			return fmt.Errorf("%d paths", len(m))
		}
		return nil
	})
	before := b.status().Peers[0].BytesReceived
	if err := os.Rename(filepath.Join(a.folder, "old"), filepath.Join(a.folder, "new")); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if _, ok := m["old"]; ok {
			return fmt.Errorf("old still there")
		}
		if _, ok := m["new/f00.bin"]; !ok {
			return fmt.Errorf("new not there")
		}
		return nil
	})
	got := b.status().Peers[0].BytesReceived - before
	// 20 files of 64-128 KiB moved: only entries (a few KiB of chunk lists
	// and signatures) may cross the wire, no chunk.
	if got > 32<<10 {
		t.Fatalf("renaming 20 files cost %d bytes received, want under 32 KiB", got)
	}
}

func TestConcurrentEdits(t *testing.T) {
	a, b := pair(t)
	lines := make([]string, 12)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i+1)
	}
	text := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	a.write("note.md", text(lines))
	b.up()
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["note.md"] != "file:"+string(text(lines)) {
			return fmt.Errorf("note.md not synced")
		}
		return nil
	})

	// Different lines, edited while b is down: both end with the merge.
	waitInSync(t, a, b)
	b.stop()
	la, lb, merged := clone(lines), clone(lines), clone(lines)
	la[1], merged[1] = "line 2 edited on a", "line 2 edited on a"
	lb[9], merged[9] = "line 10 edited on b", "line 10 edited on b"
	a.write("note.md", text(la))
	b.write("note.md", text(lb))
	time.Sleep(300 * time.Millisecond) // let a record its edit first
	b.up()
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["note.md"] != "file:"+string(text(merged)) {
			return fmt.Errorf("note.md not merged: %q", m["note.md"])
		}
		return nil
	})

	// Lines appended at the end on both sides while b is down: both
	// kept, in byte order (not in the order of the devices), no copy.
	waitInSync(t, a, b)
	b.stop()
	a.write("note.md", text(append(clone(merged), "appended on a")))
	b.write("note.md", text(append(clone(merged), "appended on b")))
	a.must("scan") // a records its append before b's arrives
	b.up()
	merged = append(merged, "appended on a", "appended on b")
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["note.md"] != "file:"+string(text(merged)) {
			return fmt.Errorf("note.md: both appends not kept: %q", m["note.md"])
		}
		for p := range m {
			if strings.Contains(p, ".conflict-") {
				return fmt.Errorf("a conflict copy %s for two appends", p)
			}
		}
		return nil
	})

	// The same line: one winner keeps the name, the other is a conflict
	// copy, alike on both devices. Both devices must first hold each
	// other's whole log (the merge above is recorded by each of them).
	waitInSync(t, a, b)
	b.stop()
	la, lb = clone(merged), clone(merged)
	la[4], lb[4] = "line 5 by a", "line 5 by b"
	a.write("note.md", text(la))
	b.write("note.md", text(lb))
	time.Sleep(300 * time.Millisecond)
	b.up()
	final := waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		var copies []string
		for p := range m {
			if strings.Contains(p, ".conflict-") {
				copies = append(copies, p)
			}
		}
		if len(copies) != 1 {
			return fmt.Errorf("conflict copies: %v", copies)
		}
		got := []string{m["note.md"], m[copies[0]]}
		wa, wb := "file:"+string(text(la)), "file:"+string(text(lb))
		if !(got[0] == wa && got[1] == wb) && !(got[0] == wb && got[1] == wa) {
			return fmt.Errorf("winner and copy are not the two edits")
		}
		return nil
	})
	out := a.must("conflicts")
	if !strings.Contains(out, ".conflict-") || !strings.Contains(out, "copy of    note.md") {
		t.Fatalf("weft conflicts: got %q, want the conflict copy listed as a copy of note.md", out)
	}
	// The story: the copy holds the other device's edit, by that device,
	// and note.md holds the winner, its size as on disk.
	var cs []api.Conflict
	if err := json.Unmarshal([]byte(a.must("conflicts", "--json")), &cs); err != nil || len(cs) != 1 {
		t.Fatalf("weft conflicts --json: %v, %d conflicts", err, len(cs))
	}
	c := cs[0]
	copyText := strings.TrimPrefix(final[c.Path], "file:")
	loser, winner := a.status().Device, b.status().Device
	if copyText == string(text(lb)) {
		loser, winner = winner, loser
	}
	if c.Of != "note.md" || c.Copy.Device != loser || c.Copy.Size != int64(len(copyText)) || c.Winner == nil ||
		c.Winner.Size != int64(len(strings.TrimPrefix(final["note.md"], "file:"))) || c.Copy.MTime.IsZero() {
		t.Fatalf("weft conflicts --json: %+v (winner %+v); want a copy of note.md by %s, %d bytes, and the winner", c, c.Winner, loser, len(copyText))
	}
	// The winner is the content's author, whichever device resolved.
	if c.Winner.Device != winner || (c.Winner.RecordedBy != "" && c.Winner.RecordedBy == winner) {
		t.Fatalf("weft conflicts --json: winner %+v, want the content of %s (recorded_by only when another device resolved)", c.Winner, winner)
	}

	// A person on b keeps the copy's content, naming the note: both
	// devices end with it at note.md and no copy.
	if _, err := b.run("resolve", filepath.Join(b.folder, "note.md")); err == nil {
		t.Fatal("weft resolve without a choice was accepted")
	}
	if out := b.must("resolve", filepath.Join(b.folder, "note.md"), "--keep", "copy"); !strings.Contains(out, "Put the copy's content at") {
		t.Fatalf("weft resolve --keep copy: %q", out)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["note.md"] != "file:"+copyText {
			return fmt.Errorf("note.md does not hold the copy's content: %q", m["note.md"])
		}
		for p := range m {
			if strings.Contains(p, ".conflict-") {
				return fmt.Errorf("a conflict copy after resolving: %s", p)
			}
		}
		return nil
	})
	if out := a.must("conflicts"); !strings.Contains(out, "No conflict copies.") {
		t.Fatalf("weft conflicts after resolving: %q", out)
	}
}

func clone(s []string) []string { return append([]string(nil), s...) }

// waitInSync waits until each device has nothing pending and reports the
// other as holding everything it holds.
func waitInSync(t *testing.T, ds ...*device) {
	t.Helper()
	for _, d := range ds {
		waitStatus(t, d, time.Minute, func(st api.Status) error {
			if f := st.Folders[0]; f.Pending != 0 || f.State != "in-sync" {
				return fmt.Errorf("state %s, %d pending", f.State, f.Pending)
			}
			for _, p := range st.Peers {
				if p.Connection != "offline" && !p.InSync {
					return fmt.Errorf("peer %s not in sync", p.ID)
				}
			}
			return nil
		})
	}
}

// watchTorn polls folder until stop is closed and reports any file seen
// under a path whose content is not one of the allowed contents.
func watchTorn(folder string, allowed func(rel string, data []byte) bool, stop <-chan struct{}) <-chan string {
	bad := make(chan string, 1)
	go func() {
		defer close(bad)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = filepath.WalkDir(folder, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() || strings.Contains(p, string(filepath.Separator)+".weft") {
					return nil
				}
				rel, _ := filepath.Rel(folder, p)
				rel = filepath.ToSlash(rel)
				if strings.HasPrefix(filepath.Base(p), ".") {
					return nil // temp files are hidden; they are not under final names
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return nil
				}
				if !allowed(rel, data) {
					select {
					case bad <- fmt.Sprintf("%s: %d bytes that match no version", rel, len(data)):
					default:
					}
				}
				return nil
			})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return bad
}

func TestKilledDuringFirstSync(t *testing.T) {
	a, b := pair(t)
	r := rand.New(rand.NewPCG(5, 6))
	want := map[string][]byte{}
	for i := range 1000 {
		p := fmt.Sprintf("d%02d/f%04d.txt", i%20, i)
		size := 200 + r.IntN(2000)
		if i%100 == 0 {
			size = 300 << 10
		}
		want[p] = randBytes(r, size)
		a.writeAtomic(p, want[p])
	}
	var mu sync.Mutex
	stop := make(chan struct{})
	bad := watchTorn(b.folder, func(rel string, data []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		return bytes.Equal(want[rel], data)
	}, stop)
	b.up()
	// Kill b once some, not all, files have arrived.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && countFiles(b.folder) <= 50 {
		time.Sleep(5 * time.Millisecond)
	}
	b.kill()
	if n := countFiles(b.folder); n <= 50 || n >= len(want) {
		t.Fatalf("%d of %d files were in b's folder at the kill: it did not land during the first sync", n, len(want))
	} else {
		t.Logf("killed b with %d of %d files in its folder", n, len(want))
	}
	b.up()
	waitSame(t, a, b, 2*time.Minute, nil)
	close(stop)
	if msg, ok := <-bad; ok {
		t.Fatalf("a partially written file was visible: %s", msg)
	}
}

// countFiles counts the regular files under root outside .weft, without
// reading them.
func countFiles(root string) int {
	n := 0
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case e.IsDir() && e.Name() == ".weft":
			return filepath.SkipDir
		case e.Type().IsRegular() && !strings.HasPrefix(e.Name(), folder.TempPrefix):
			n++
		}
		return nil
	})
	return n
}

func TestFileChangingWhileSent(t *testing.T) {
	a, b := pair(t)
	b.up()
	// Each version of the file is one byte value repeated: a torn file
	// would mix values.
	const size = 8 << 20
	version := func(k byte) []byte { return bytes.Repeat([]byte{k}, size) }
	stop := make(chan struct{})
	bad := watchTorn(b.folder, func(rel string, data []byte) bool {
		// os.WriteFile truncates before it writes, so a's scanner may
		// legitimately catch the file empty between two versions; what
		// must never appear is a mix or a part of a version.
		if len(data) == 0 {
			return true
		}
		return len(data) == size && bytes.Count(data, data[:1]) == size
	}, stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	k := byte(0)
	for ctx.Err() == nil {
		k++
		a.write("big.bin", version(k))
		time.Sleep(time.Duration(20+int(k)%5*40) * time.Millisecond)
	}
	waitSame(t, a, b, 2*time.Minute, func(m map[string]string) error {
		if m["big.bin"] != "file:"+string(version(k)) {
			return fmt.Errorf("big.bin is not the last version yet")
		}
		return nil
	})
	close(stop)
	if msg, ok := <-bad; ok {
		t.Fatalf("torn file seen: %s", msg)
	}
}

func TestBadInviteCodes(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	a.up()
	code := func(args ...string) string {
		out := a.must(append([]string{"invite"}, args...)...)
		ls := strings.Split(strings.TrimSpace(out), "\n")
		return ls[len(ls)-1]
	}
	noVault := func(d *device) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(d.home, "vaults")); err == nil {
			entries, _ := os.ReadDir(filepath.Join(d.home, "vaults"))
			if len(entries) > 0 {
				t.Fatalf("%s: a failed join left a vault behind", d.name)
			}
		}
	}
	tests := []struct {
		name string
		code func() string
		want string
	}{
		{"garbage", func() string { return "hello-this-is-not-a-code" }, "malformed"},
		{"typo", func() string { c := code(); return c[:20] + flipChar(c[20]) + c[21:] }, "typo"},
		{"expired", func() string { c := code("--ttl", "1s"); time.Sleep(2 * time.Second); return c }, "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newDevice(t, "b-"+tt.name)
			_, err := b.run("join", tt.code(), b.folder)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tt.want)
			}
			noVault(b)
		})
	}
	t.Run("used", func(t *testing.T) {
		c := code()
		b1, b2 := newDevice(t, "b1"), newDevice(t, "b2")
		b1.must("join", c, b1.folder)
		_, err := b2.run("join", c, b2.folder)
		if err == nil || !strings.Contains(err.Error(), "already used") {
			t.Fatalf("got %v, want an error saying the code was already used", err)
		}
		noVault(b2)
	})
}

func flipChar(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

// TestFetchFromSeveralPeers checks that a device fetches one file's chunks
// from every member that holds them, not all from one. The third device
// learns where the second listens by peer exchange (it was invited by the
// first), and is offline while the file reaches the second.
func TestFetchFromSeveralPeers(t *testing.T) {
	a, b := pair(t)
	b.up()
	c := newDevice(t, "c")
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	c.must("join", lines[len(lines)-1], c.folder)
	c.up()
	a.write("hello.md", []byte("hello"))
	waitSame(t, a, c, time.Minute, func(m map[string]string) error {
		if m["hello.md"] != "file:hello" {
			return fmt.Errorf("hello.md not on c yet")
		}
		return nil
	})
	c.stop()
	r := rand.New(rand.NewPCG(7, 8))
	big := randBytes(r, 16<<20)
	a.write("big.bin", big)
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["big.bin"] != "file:"+string(big) {
			return fmt.Errorf("big.bin not on b yet")
		}
		return nil
	})
	c.up()
	waitSame(t, a, c, time.Minute, func(m map[string]string) error {
		if m["big.bin"] != "file:"+string(big) {
			return fmt.Errorf("big.bin not on c yet")
		}
		return nil
	})
	st := c.status()
	if len(st.Peers) != 2 {
		t.Fatalf("c sees %d peers, want 2", len(st.Peers))
	}
	// Each peer must have served a real share of the chunks (not just log
	// traffic). The split is even once both peers are connected; allow for
	// the first window going to whichever connected first.
	for _, p := range st.Peers {
		if p.BytesReceived < int64(len(big))/16 {
			t.Errorf("c received %d bytes from %s, want at least a sixteenth of the file (%d): chunks should come from both peers", p.BytesReceived, p.ID, len(big)/16)
		}
	}
}

// waitStatus polls d's status until ok accepts it.
func waitStatus(t *testing.T, d *device, limit time.Duration, ok func(api.Status) error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var why error
	for time.Now().Before(deadline) {
		if why = ok(d.status()); why == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: status not as expected after %s: %v\n%s", d.name, limit, why, d.logTail())
}

// TestUnsafeIsTruthful checks the status's "unsafe" count: 0 once another
// device holds everything this one wrote, 1 after an edit no one else has
// seen, and still 1 (not forgotten, not 0) after a restart.
func TestUnsafeIsTruthful(t *testing.T) {
	a, b := pair(t)
	b.up()
	unsafe := func(want uint64) func(api.Status) error {
		return func(st api.Status) error {
			if got := st.Folders[0].Unsafe; got != want {
				return fmt.Errorf("unsafe %d, want %d", got, want)
			}
			return nil
		}
	}
	files := func(n int, then func(api.Status) error) func(api.Status) error {
		return func(st api.Status) error {
			if st.Folders[0].Files != n {
				return fmt.Errorf("%d files recorded, want %d", st.Folders[0].Files, n)
			}
			return then(st)
		}
	}
	a.write("one.md", []byte("one"))
	waitStatus(t, a, time.Minute, files(1, unsafe(0)))
	b.stop()
	a.write("two.md", []byte("two"))
	waitStatus(t, a, time.Minute, files(2, unsafe(1)))
	a.stop()
	a.up()
	waitStatus(t, a, time.Minute, func(st api.Status) error {
		if !st.Folders[0].InitialScanDone {
			return fmt.Errorf("first scan not done")
		}
		return unsafe(1)(st)
	})
}

// logAll is the device's whole agent log (up() writes it beside home).
func (d *device) logAll() string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(d.home), d.name+".log"))
	return string(b)
}
