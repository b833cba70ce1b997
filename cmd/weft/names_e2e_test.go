package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/member"
)

// peerName is the name d's status gives the peer id.
func peerName(d *device, id string) string {
	for _, p := range d.status().Peers {
		if p.ID == id {
			return p.Name
		}
	}
	return ""
}

// TestDeviceNames: names given at init and join are signed into the
// membership and shown on every device (status, devices, history); a
// device renames itself, an admin renames a member, a member cannot
// rename another; without --name a device takes its host name.
func TestDeviceNames(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder, "--name", "laptop")
	a.up()
	out := b.must("join", lastLine(a.must("invite")), b.folder, "--name", "Zoë's phone")
	b.up()
	// A join without approval still has its words: the joiner prints them
	// and the inviter logs them with the joined device's name.
	_, words, ok := strings.Cut(out, "shows these words for this join: ")
	words, _, _ = strings.Cut(words, "\n")
	if !ok || len(strings.Fields(words)) != 4 {
		t.Fatalf("join's output has no words:\n%s", out)
	}
	eventually(t, time.Minute, func() error {
		if log := a.logAll(); !strings.Contains(log, `msg="device joined"`) || !strings.Contains(log, `words="`+words+`"`) {
			return fmt.Errorf("a's log has no join with the words %q", words)
		}
		return nil
	})
	aID, bID := a.status().Device, b.status().Device
	if st := a.status(); st.Name != "laptop" || peerName(a, bID) != "Zoë's phone" {
		t.Fatalf("a: name %q, b named %q", st.Name, peerName(a, bID))
	}
	eventually(t, time.Minute, func() error {
		if got := peerName(b, aID); got != "laptop" || b.status().Name != "Zoë's phone" {
			return fmt.Errorf("b: name %q, a named %q", b.status().Name, got)
		}
		return nil
	})
	if out := a.must("devices"); !strings.Contains(out, "laptop") || !strings.Contains(out, "Zoë's phone") {
		t.Fatalf("devices on a:\n%s", out)
	}
	b.writeAtomic("from-phone.md", []byte("written on the phone"))
	waitSame(t, a, b, time.Minute, filesIn(1))
	var h api.History
	if err := json.Unmarshal([]byte(a.must("history", a.folder+"/from-phone.md", "--json")), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Versions) != 1 || h.Versions[0].AuthorName != "Zoë's phone" {
		t.Fatalf("history on a: %+v", h.Versions)
	}

	b.must("devices", "rename", "old phone")
	eventually(t, time.Minute, func() error {
		if got := peerName(a, bID); got != "old phone" {
			return fmt.Errorf("a names b %q after b renamed itself", got)
		}
		return nil
	})
	a.must("devices", "rename", bID, "tablet")
	eventually(t, time.Minute, func() error {
		if got := b.status().Name; got != "tablet" {
			return fmt.Errorf("b's own name %q after the admin renamed it", got)
		}
		return nil
	})
	if out, err := b.run("devices", "rename", aID, "mine"); err == nil {
		t.Fatalf("a member renamed another device:\n%s", out)
	}
	if out, err := b.run("devices", "rename", " padded"); err == nil {
		t.Fatalf("a name with a leading space was taken:\n%s", out)
	}

	// Without --name: the host name.
	host, _ := os.Hostname()
	if member.CheckName(host) == nil {
		c := newDevice(t, "c")
		c.must("join", lastLine(a.must("invite")), c.folder)
		c.up()
		if got := c.status().Name; got != host {
			t.Fatalf("c's default name %q, want the host name %q", got, host)
		}
	}
}
