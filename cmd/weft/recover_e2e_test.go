package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// phraseOf returns the recovery phrase `weft init` printed: the 24 words
// on the indented lines after "Recovery phrase".
func phraseOf(t *testing.T, initOut string) string {
	t.Helper()
	_, rest, ok := strings.Cut(initOut, "Recovery phrase")
	if !ok {
		t.Fatalf("init printed no recovery phrase:\n%s", initOut)
	}
	var words []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if strings.HasPrefix(line, "  ") {
			words = append(words, strings.Fields(line)...)
		}
	}
	if len(words) != 24 {
		t.Fatalf("init printed %d phrase words, want 24:\n%s", len(words), initOut)
	}
	return strings.Join(words, " ")
}

// recoverWith runs `weft recover` on d with phrase on standard input.
func (d *device) recoverWith(phrase string, args ...string) (string, error) {
	cmd := d.command(append([]string{"recover"}, args...)...)
	cmd.Stdin = strings.NewReader(phrase + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestRecoverWithThePhrase: a vault whose only admin is lost comes back
// from its recovery phrase and its relay alone, after a revocation too:
// the new device gets every file (the ones written under the new key
// epoch included), is an admin (it revokes the lost device and invites a
// new one), and a wrong phrase gets nothing.
func TestRecoverWithThePhrase(t *testing.T) {
	rl := startRelay(t, "")
	a, b := newDevice(t, "a"), newDevice(t, "b")
	phrase := phraseOf(t, a.must("init", a.folder, "--relay", rl.addr()))
	a.up()
	b.must("join", lastLine(a.must("invite")), b.folder)
	b.up()
	a.writeAtomic("before.md", []byte("written in epoch 0"))
	waitSame(t, a, b, time.Minute, filesIn(1))
	// Revoking B starts key epoch 1: what A writes next is sealed under
	// keys B never gets, and the phrase must still open.
	a.must("revoke", b.status().Device)
	b.stop()
	rng := rand.New(rand.NewPCG(18, 1))
	a.writeAtomic("after.md", []byte("written in epoch 1"))
	a.writeAtomic("photos/big.bin", randBytes(rng, 700<<10)) // chunks, not inline
	waitStatus(t, a, 2*time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.Files != 3 || f.Unsafe != 0 {
			return fmt.Errorf("files %d, unsafe %d; want 3 files all held by the relay", f.Files, f.Unsafe)
		}
		return nil
	})
	lost := a.status().Device
	want, err := tree(a.folder)
	if err != nil {
		t.Fatal(err)
	}
	a.stop()
	if err := os.RemoveAll(a.home); err != nil { // the only admin's device is gone
		t.Fatal(err)
	}

	c := newDevice(t, "c")
	words := strings.Fields(phrase)
	words[3], words[4] = words[4], words[3]
	if out, err := c.recoverWith(strings.Join(words, " "), c.folder, "--from", rl.addr()); err == nil {
		t.Fatalf("recovery with two words swapped succeeded:\n%s", out)
	} else if !strings.Contains(out, "recovery phrase") {
		t.Fatalf("recovery with two words swapped: want an error about the phrase, got:\n%s", out)
	}
	if out, err := c.recoverWith(phrase, c.folder); err == nil || !strings.Contains(out, "--from is required") {
		t.Fatalf("recovery without --from: %v\n%s", err, out)
	}
	if out, err := c.recoverWith(phrase, c.folder, "--from", rl.addr()); err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	c.up()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := tree(c.folder)
		if err == nil && sameTree(want, got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recovered device did not get the folder from the relay:\n%s\nc log:\n%s", diffTree(want, got), c.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// C is an admin: it revokes the lost device and admits a new one.
	c.must("revoke", lost)
	d := newDevice(t, "d")
	d.must("join", lastLine(c.must("invite")), d.folder)
	d.up()
	waitSame(t, c, d, 2*time.Minute, filesIn(3))
	waitStatus(t, d, time.Minute, inSync)
}

// TestRecoverRefusesAVaultOfAnotherPhrase: asking a relay that does not
// serve the phrase's vault changes nothing on the recovering device.
func TestRecoverRefusesAVaultOfAnotherPhrase(t *testing.T) {
	rl := startRelay(t, "")
	other := newDevice(t, "other")
	phrase := phraseOf(t, other.must("init", other.folder))
	c := newDevice(t, "c")
	out, err := c.recoverWith(phrase, c.folder, "--from", rl.addr())
	if err == nil || !strings.Contains(out, "not a member of a vault served here") {
		t.Fatalf("recovery from a relay that does not serve the vault: %v\n%s", err, out)
	}
	if vs, err := os.ReadDir(filepath.Join(c.home, "vaults")); len(vs) != 0 {
		t.Fatalf("a refused recovery left %d vaults in the home (%v)", len(vs), err)
	}
}

// TestRecoverFromARunningDevice: a device of the vault answers a recovery
// as a relay does; the recovered device is an admin at once, and the
// other device learns it.
func TestRecoverFromARunningDevice(t *testing.T) {
	a := newDevice(t, "a")
	phrase := phraseOf(t, a.must("init", a.folder))
	a.up()
	a.writeAtomic("note.md", []byte("kept on the one device left"))
	st := a.status()
	var from string
	for _, addr := range st.Addrs {
		if strings.Contains(addr, "/127.0.0.1/tcp/") {
			from = addr
			break
		}
	}
	if from == "" {
		t.Fatalf("a listens on no loopback TCP address: %v", st.Addrs)
	}
	if !strings.Contains(from, "/p2p/") {
		from += "/p2p/" + st.Device
	}
	c := newDevice(t, "c")
	if out, err := c.recoverWith(phrase, c.folder, "--from", from); err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	c.up()
	waitSame(t, a, c, time.Minute, filesIn(1))
	waitStatus(t, c, time.Minute, inSync)
	// A second recovery is another device, not a replay of the first.
	e := newDevice(t, "e")
	if out, err := e.recoverWith(phrase, e.folder, "--from", from); err != nil {
		t.Fatalf("second recovery: %v\n%s", err, out)
	}
	if out := a.must("devices"); strings.Count(out, "admin") < 3 {
		t.Fatalf("a lists fewer than 3 admins after two recoveries:\n%s", out)
	}
}
