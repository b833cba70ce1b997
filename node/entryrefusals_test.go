package node

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// TestRefusalLogDue: a peer's refusals are logged at the first and then at
// most once per refusedLogEvery, per peer.
func TestRefusalLogDue(t *testing.T) {
	var r entryRefusals
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	t0 := time.Unix(1_800_000_000, 0)
	for _, tt := range []struct {
		dev  keys.DeviceID
		at   time.Time
		want bool
	}{
		{a, t0, true},
		{a, t0.Add(time.Minute), false},
		{b, t0.Add(time.Minute), true},
		{a, t0.Add(refusedLogEvery - time.Nanosecond), false},
		{a, t0.Add(refusedLogEvery), true},
		{a, t0.Add(refusedLogEvery + time.Second), false},
	} {
		if got := r.due(tt.dev, tt.at); got != tt.want {
			t.Errorf("%s at +%v: due %v, want %v", tt.dev.Short(), tt.at.Sub(t0), got, tt.want)
		}
	}
}

// TestForkProbes: a probe ends the running pull from that peer, is taken
// by the next request once, and names the entry before the refused one
// (the first entry when the claim names none).
func TestForkProbes(t *testing.T) {
	var p forkProbes
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	ended := 0
	p.setRestart(a, func() { ended++ })
	p.probe(a, 7)
	p.probe(b, 0)
	if ended != 1 {
		t.Fatalf("the running pull from a ended %d times, want once", ended)
	}
	if from, ok := p.take(a); !ok || from != 6 {
		t.Fatalf("take(a) = %d, %v; want 6, true", from, ok)
	}
	if _, ok := p.take(a); ok {
		t.Fatal("a probe taken twice")
	}
	if from, ok := p.take(b); !ok || from != 1 {
		t.Fatalf("take(b) = %d, %v; want 1, true (no usable entry: from the first)", from, ok)
	}
	p.setRestart(a, nil)
	p.probe(a, 3)
	if ended != 1 {
		t.Fatal("a forgotten pull was ended")
	}
}
