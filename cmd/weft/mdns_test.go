//go:build linux

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// newNetns creates a network namespace with only a loopback interface that
// carries multicast, so mDNS can run without a packet leaving the machine.
// It skips the test where namespaces cannot be made (not root, no ip).
func newNetns(t *testing.T) string {
	t.Helper()
	requireNetns(t)
	removeStaleNetns(t, "mdns")
	name := netnsName("mdns", "")
	addNetns(t, name)
	for _, args := range [][]string{
		{"-n", name, "link", "set", "lo", "multicast", "on"},
		{"-n", name, "route", "add", "224.0.0.0/4", "dev", "lo"},
	} {
		if err := ipRun(args...); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestMDNSDiscovery checks that two devices on one LAN find each other with
// mDNS alone: after a restart on new ports their remembered addresses are
// stale, so only discovery can bring them together again. Everything runs
// inside a namespace the test made.
func TestMDNSDiscovery(t *testing.T) {
	ns := newNetns(t)
	a, b := newDevice(t, "a"), newDevice(t, "b")
	for _, d := range []*device{a, b} {
		d.netns = ns
		d.upArgs = []string{"--mdns=true"}
	}
	a.must("init", a.folder)
	a.up()
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.must("join", lines[len(lines)-1], b.folder)
	b.up()
	a.write("first.md", []byte("paired"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["first.md"] != "file:paired" {
			return fmt.Errorf("first.md not synced")
		}
		return nil
	})
	before := map[*device][]string{a: a.status().Addrs, b: b.status().Addrs}
	a.stop()
	b.stop()
	// New ports (a device keeps its ports across restarts otherwise): what
	// each remembered of the other is stale, so only mDNS can bring them
	// together again.
	for _, d := range []*device{a, b} {
		d.upArgs = append(d.upArgs, "--fresh-ports")
		d.up()
		if after := d.status().Addrs; slices.Equal(after, before[d]) {
			t.Fatalf("%s listens where it did before the restart (%v): the test would not need mDNS", d.name, after)
		}
	}
	a.write("second.md", []byte("found by mDNS"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["second.md"] != "file:found by mDNS" {
			return fmt.Errorf("second.md not synced")
		}
		return nil
	})
}
