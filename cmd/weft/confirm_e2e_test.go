package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// joining is a `weft join` running in the background.
type joining struct {
	cmd   *exec.Cmd
	words chan string // the words it shows while it waits
	mu    sync.Mutex  // guards out
	out   bytes.Buffer
	read  chan struct{} // closed once all output is read
	done  chan error
}

// startJoin runs `weft join code folder` on d without waiting for it.
func (d *device) startJoin(code string) *joining {
	d.t.Helper()
	j := &joining{cmd: d.command("join", code, d.folder), words: make(chan string, 1), read: make(chan struct{}), done: make(chan error, 1)}
	pr, pw := io.Pipe()
	j.cmd.Stdout, j.cmd.Stderr = pw, pw
	if err := j.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() {
		defer close(j.read)
		sc := bufio.NewScanner(pr)
		shown := false // the line announcing the words was read
		for sc.Scan() {
			line := sc.Text()
			j.mu.Lock()
			j.out.WriteString(line + "\n")
			j.mu.Unlock()
			switch {
			case strings.Contains(line, "these words"):
				shown = true
			case shown && strings.TrimSpace(line) != "":
				shown = false
				j.words <- strings.TrimSpace(line)
			}
		}
	}()
	go func() {
		err := j.cmd.Wait()
		pw.Close()
		j.done <- err
	}()
	d.t.Cleanup(func() { _ = j.cmd.Process.Kill() })
	return j
}

func (j *joining) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.String()
}

// waitWords returns the words a waiting join shows.
func (j *joining) waitWords(t *testing.T) string {
	t.Helper()
	select {
	case w := <-j.words:
		return w
	case err := <-j.done:
		t.Fatalf("join ended before it showed words: %v\n%s", err, j.output())
	case <-time.After(time.Minute):
		t.Fatalf("join showed no words:\n%s", j.output())
	}
	return ""
}

// wait returns the join's output and result once it ends.
func (j *joining) wait(t *testing.T) (string, error) {
	t.Helper()
	select {
	case err := <-j.done:
		<-j.read
		return j.output(), err
	case <-time.After(2 * time.Minute):
		t.Fatalf("join did not end:\n%s", j.output())
	}
	return "", nil
}

// pendingJoins lists a's waiting joins.
func (d *device) pendingJoins() []api.WaitingJoin {
	d.t.Helper()
	var js []api.WaitingJoin
	if err := json.Unmarshal([]byte(d.must("devices", "pending", "--json")), &js); err != nil {
		d.t.Fatal(err)
	}
	return js
}

// TestInviteConfirm: with --confirm, whoever uses the code first does not
// get in: each join waits, both devices show the same words for it, the
// approved one gets the vault, the other is told and keeps nothing; a
// denied join is told so.
func TestInviteConfirm(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	a.up()
	a.writeAtomic("note.md", []byte("for the approved device only"))
	code := lastLine(a.must("invite", "--confirm"))

	thief, b := newDevice(t, "thief"), newDevice(t, "b")
	tj := thief.startJoin(code)
	thiefWords := tj.waitWords(t)
	bj := b.startJoin(code)
	bWords := bj.waitWords(t)
	if bWords == thiefWords || len(strings.Fields(bWords)) != 4 {
		t.Fatalf("words: b %q, thief %q; want four words each, different", bWords, thiefWords)
	}
	var waiting []api.WaitingJoin
	deadline := time.Now().Add(time.Minute)
	for waiting = a.pendingJoins(); len(waiting) < 2; waiting = a.pendingJoins() {
		if time.Now().After(deadline) {
			t.Fatalf("a lists %d waiting joins, want 2", len(waiting))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var bDevice string
	for _, w := range waiting {
		if w.Words == bWords {
			bDevice = w.Device
		}
	}
	if bDevice == "" {
		t.Fatalf("no waiting join on a shows b's words %q: %+v", bWords, waiting)
	}
	a.must("devices", "approve", bDevice[:20])
	if out, err := bj.wait(t); err != nil {
		t.Fatalf("approved join: %v\n%s", err, out)
	}
	out, err := tj.wait(t)
	if err == nil || !strings.Contains(out, "not approved") {
		t.Fatalf("the other join: %v\n%s", err, out)
	}
	if vs, _ := os.ReadDir(filepath.Join(thief.home, "vaults")); len(vs) != 0 {
		t.Fatalf("the refused device kept %d vaults", len(vs))
	}
	b.up()
	waitSame(t, a, b, time.Minute, filesIn(1))

	// Denied.
	code = lastLine(a.must("invite", "--confirm"))
	d := newDevice(t, "d")
	dj := d.startJoin(code)
	dWords := dj.waitWords(t)
	var dDevice string
	for deadline := time.Now().Add(time.Minute); dDevice == ""; {
		for _, w := range a.pendingJoins() {
			if w.Words == dWords {
				dDevice = w.Device
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("d's join is not listed on a")
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.must("devices", "deny", dDevice)
	if out, err := dj.wait(t); err == nil || !strings.Contains(out, "denied") {
		t.Fatalf("denied join: %v\n%s", err, out)
	}
	if vs, _ := os.ReadDir(filepath.Join(d.home, "vaults")); len(vs) != 0 {
		t.Fatalf("the denied device kept %d vaults", len(vs))
	}
	if fs, _ := os.ReadDir(d.folder); len(fs) != 0 {
		t.Fatalf("the denied device's folder holds %d entries", len(fs))
	}
	if js := a.pendingJoins(); len(js) != 0 {
		t.Fatalf("joins still waiting: %+v", js)
	}
	if out, err := a.run("devices", "approve", "12D3KooWnobody"); err == nil {
		t.Fatalf("approving a join that does not wait: %s", out)
	}
}
