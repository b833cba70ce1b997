package main

import (
	"strings"
	"testing"
	"time"
)

// A device revoked by the admin is not told, but no longer says in-sync:
// the members refuse it, so its folder is in error with code revoked and
// doctor reports it as a problem (exit 3).
func TestRevokedDeviceSaysSo(t *testing.T) {
	a, b := pair(t)
	b.up()
	c := newDevice(t, "c")
	c.must("join", lastLine(a.must("invite")), c.folder)
	c.up()
	a.writeAtomic("note.md", []byte("shared with everyone"))
	waitSame(t, a, c, time.Minute, filesIn(1))
	waitSame(t, a, b, time.Minute, filesIn(1))
	waitStatus(t, c, time.Minute, inSync)

	a.must("revoke", c.status().Device)
	waitStatus(t, c, time.Minute, folderCode("error", "revoked"))
	if code, out, _ := c.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "revoked"`) {
		t.Fatalf("doctor on c: exit %d, output:\n%s\nwant exit 3 naming revoked", code, out)
	}
	// A and B are not affected.
	for _, d := range []*device{a, b} {
		waitStatus(t, d, time.Minute, inSync)
	}
}
