package main

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestRestartedAgentsReconnect (issue 18): two agents that both stop and
// both start again, with mDNS off and no relay or DHT, find each other at
// the addresses they remembered, because each listens on the port of its
// last start (docs/connectivity.md, "Listen ports"), and a note written
// after the restarts arrives over a direct connection. The test checks the
// addresses themselves (the same before and after), and issue 18's bound
// of 10 s from the second start to the note's arrival. The time from the second start to the note's
// arrival is logged; docs/benchmarks.md has the measured figure.
func TestRestartedAgentsReconnect(t *testing.T) {
	a, b := pair(t)
	b.up()
	a.write("before.md", []byte("before the restarts\n"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["before.md"] != "file:before the restarts\n" {
			return fmt.Errorf("before.md not there yet")
		}
		return nil
	})
	addrsA, addrsB := a.status().Addrs, b.status().Addrs
	a.stop()
	b.stop()

	a.up()
	b.up()
	started := time.Now()
	// The mechanism, not the clock: each listens where it did before, so
	// what the other remembered still reaches it.
	for _, c := range []struct {
		d      *device
		before []string
	}{{a, addrsA}, {b, addrsB}} {
		after := c.d.status().Addrs
		if len(after) == 0 || !slices.Equal(slices.Sorted(slices.Values(after)), slices.Sorted(slices.Values(c.before))) {
			t.Fatalf("%s listens at %v after the restart, %v before", c.d.name, after, c.before)
		}
	}
	a.write("after.md", []byte("after the restarts\n"))
	// Issue 18's bound: they meet again within 10 s (about 0.2 s is
	// usual, docs/benchmarks.md), so this wait is a liveness bound with a
	// wide margin, not a speed target.
	waitSame(t, a, b, 10*time.Second, func(m map[string]string) error {
		if m["after.md"] != "file:after the restarts\n" {
			return fmt.Errorf("after.md not there yet")
		}
		return nil
	})
	t.Logf("both restarted: the note written after the second start reached the other side in %v", time.Since(started).Round(time.Millisecond))
	for _, d := range []*device{a, b} {
		for _, p := range d.status().Peers {
			if p.Connection != "lan" && p.Connection != "direct" {
				t.Errorf("%s reaches %s by %q, want a direct connection (there is no relay)", d.name, p.ID, p.Connection)
			}
		}
	}
}
