package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// eventually retries f until it returns nil, for up to limit.
func eventually(t *testing.T, limit time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSeveralAdmins: an admin makes another device an admin, which then
// invites; an admin steps down while another remains, the last one
// cannot; the vault's setting lets every member invite, and turning it
// off stops them; an admin removes another admin.
func TestSeveralAdmins(t *testing.T) {
	a, b := pair(t)
	b.up()
	c := newDevice(t, "c")
	c.must("join", lastLine(a.must("invite")), c.folder)
	c.up()
	bID := b.status().Device
	if out, err := b.run("invite"); err == nil || !strings.Contains(err.Error(), "only the vault's admins") {
		t.Fatalf("a member invited: %v\n%s", err, out)
	}

	a.must("admin", "add", bID)
	eventually(t, time.Minute, func() error {
		_, err := b.run("invite")
		return err
	})
	eventually(t, time.Minute, func() error {
		if out := c.must("devices"); strings.Count(out, "admin") != 2 {
			return fmt.Errorf("c lists %d admins, want 2:\n%s", strings.Count(out, "admin"), out)
		}
		return nil
	})
	// a steps down while b is an admin; b, now the last, cannot.
	a.must("admin", "remove", a.status().Device)
	eventually(t, time.Minute, func() error {
		out, err := b.run("admin", "remove", bID)
		if err == nil {
			t.Fatalf("the last admin stepped down:\n%s", out)
		}
		if !strings.Contains(err.Error(), "last admin") {
			return err // b has not learned a's step down yet
		}
		return nil
	})
	if out, err := a.run("admin", "add", a.status().Device); err == nil || !strings.Contains(err.Error(), "admin") {
		t.Fatalf("a former admin promoted itself: %v\n%s", err, out)
	}

	// Members invite once the vault says so.
	var set []api.VaultSettings
	if err := json.Unmarshal([]byte(b.must("settings", "--members-invite", "on", "--json")), &set); err != nil || len(set) != 1 || !set[0].MembersInvite || !set[0].Recoverable {
		t.Fatalf("settings after turning members-invite on: %+v, %v", set, err)
	}
	var code string
	eventually(t, time.Minute, func() error {
		out, err := c.run("invite")
		code = lastLine(out)
		return err
	})
	d := newDevice(t, "d")
	d.must("join", code, d.folder)
	d.up()
	c.writeAtomic("from-c.md", []byte("c invited d"))
	waitSame(t, c, d, time.Minute, filesIn(1))
	b.must("settings", "--members-invite", "off")
	eventually(t, time.Minute, func() error {
		if _, err := c.run("invite"); err == nil {
			return fmt.Errorf("c still invites with members-invite off")
		}
		return nil
	})

	// An admin removes another admin: c, made one by b, is a member again.
	cID := c.status().Device
	b.must("admin", "add", cID)
	eventually(t, time.Minute, func() error {
		_, err := c.run("invite")
		return err
	})
	b.must("admin", "remove", cID)
	eventually(t, time.Minute, func() error {
		if _, err := c.run("invite"); err == nil || !strings.Contains(err.Error(), "only the vault's admins") {
			return fmt.Errorf("c, no longer an admin, invites (or fails otherwise): %v", err)
		}
		return nil
	})
}
