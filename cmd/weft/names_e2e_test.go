package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
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
// membership and shown on every device (status, devices, history), and a
// conflict copy is named for the device whose edit it holds; a device
// renames itself, an admin renames a member, a member cannot
// rename another; without --name a device takes its host name.
func TestDeviceNames(t *testing.T) {
	a, b, c := newDevice(t, "a"), newDevice(t, "b"), newDevice(t, "c")
	a.must("init", a.folder, "--name", "laptop")
	a.up()
	c.must("join", lastLine(a.must("invite")), c.folder, "--name", "desk")
	c.up()
	out := b.must("join", lastLine(a.must("invite")), b.folder, "--name", "Zoë's phone")
	b.up()
	// A join without approval still has its words: the joiner prints them
	// and the inviter logs them with the joined device's name.
	_, words, ok := strings.Cut(out, "shows these words for this join: ")
	words, _, _ = strings.Cut(words, "\n")
	if !ok || len(strings.Fields(words)) != 4 {
		t.Fatalf("join's output has no words:\n%s", out)
	}
	// Every other member shows the join's words too, from the add record.
	for _, d := range []*device{a, c} {
		eventually(t, time.Minute, func() error {
			for line := range strings.Lines(d.logAll()) {
				if strings.Contains(line, `msg="device joined"`) && strings.Contains(line, `name="Zoë's phone"`) && strings.Contains(line, `words="`+words+`"`) {
					return nil
				}
			}
			return fmt.Errorf("%s's log has no join of b with the words %q", d.name, words)
		})
	}
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

	// A conflict copy is named for the device whose edit it keeps, in the
	// name its entry carried (protocol.ConflictName).
	b.stop()
	a.writeAtomic("both.txt", []byte("edited on the laptop\n"))
	a.must("scan")
	b.writeAtomic("both.txt", []byte("edited on the phone\n"))
	b.up()
	got := waitSame(t, a, b, 2*time.Minute, filesIn(3))
	waitSame(t, a, c, time.Minute, filesIn(3))
	tags := map[string]string{aID: "laptop", bID: "Zoë_s_phone"}
	copies := 0
	for p, content := range got {
		o, ok := protocol.ParseConflictName(p)
		if !ok {
			continue
		}
		copies++
		by := aID
		if strings.Contains(content, "phone") {
			by = bID
		}
		dev, err := keys.ParseDeviceID(by)
		if err != nil {
			t.Fatal(err)
		}
		if o.Of != "both.txt" || o.Name != tags[by] || o.Author != dev.Short() {
			t.Errorf("conflict copy %s (holding %q): read as %+v, want named %q, by %s", p, content, o, tags[by], dev.Short())
		}
	}
	if copies != 1 {
		t.Fatalf("%d conflict copies, want 1: %v", copies, got)
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
		d := newDevice(t, "d")
		d.must("join", lastLine(a.must("invite")), d.folder)
		d.up()
		if got := d.status().Name; got != host {
			t.Fatalf("d's default name %q, want the host name %q", got, host)
		}
	}
}
