package main

import (
	"fmt"
	"testing"
	"time"
)

// TestRestartedAgentsReconnect (issue 18): two agents that both stop and
// both start again, with mDNS off and no relay or DHT, find each other at
// the addresses they remembered, because each listens on the port of its
// last start (docs/connectivity.md, "Listen ports"), and a note written
// after the restarts arrives. The time from the second start to the note's
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
	a.stop()
	b.stop()

	a.up()
	b.up()
	started := time.Now()
	a.write("after.md", []byte("after the restarts\n"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["after.md"] != "file:after the restarts\n" {
			return fmt.Errorf("after.md not there yet")
		}
		return nil
	})
	t.Logf("both restarted: the note written after the second start reached the other side in %v", time.Since(started).Round(time.Millisecond))
}
