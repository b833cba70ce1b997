package heard

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// TestRefusalLogDue: a peer's refusals are logged at the first and then at
// most once per RefusedLogEvery, per peer.
func TestRefusalLogDue(t *testing.T) {
	var r EntryRefusals
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
		{a, t0.Add(RefusedLogEvery - time.Nanosecond), false},
		{a, t0.Add(RefusedLogEvery), true},
		{a, t0.Add(RefusedLogEvery + time.Second), false},
	} {
		if got := r.Due(tt.dev, tt.at); got != tt.want {
			t.Errorf("%s at +%v: due %v, want %v", tt.dev.Short(), tt.at.Sub(t0), got, tt.want)
		}
	}
}

// TestForkProbes: a probe ends the running pull from that peer, is taken
// by the next request once, and names the entry before the refused one
// (the first entry when the claim names none).
func TestForkProbes(t *testing.T) {
	var p ForkProbes
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	ended := 0
	p.SetRestart(a, func() { ended++ })
	p.Probe(a, 7)
	p.Probe(b, 0)
	if ended != 1 {
		t.Fatalf("the running pull from a ended %d times, want once", ended)
	}
	if from, ok := p.Take(a); !ok || from != 6 {
		t.Fatalf("take(a) = %d, %v; want 6, true", from, ok)
	}
	if _, ok := p.Take(a); ok {
		t.Fatal("a probe taken twice")
	}
	if from, ok := p.Take(b); !ok || from != 1 {
		t.Fatalf("take(b) = %d, %v; want 1, true (no usable entry: from the first)", from, ok)
	}
	p.SetRestart(a, nil)
	p.Probe(a, 3)
	if ended != 1 {
		t.Fatal("a forgotten pull was ended")
	}
}

// TestMembershipAnswers: refusals count while no member accepts this
// device; the first refusal of an episode and a member accepting again
// are said once.
func TestMembershipAnswers(t *testing.T) {
	var m Membership
	x, y := keys.DeviceID{1}, keys.DeviceID{2}
	t0 := time.Unix(1_800_000_000, 0)
	if first, _ := m.Answer(x, true, t0); !first || m.Refused() != 1 {
		t.Fatalf("first refusal: said %v, refused %d", first, m.Refused())
	}
	if first, _ := m.Answer(y, true, t0); first || m.Refused() != 2 {
		t.Fatalf("second refusal: said again %v, refused %d", first, m.Refused())
	}
	if _, again := m.Answer(y, false, t0); !again || m.Refused() != 0 {
		t.Fatalf("y accepts again: said %v, refused %d (want 0 while one accepts)", again, m.Refused())
	}
	if _, again := m.Answer(y, false, t0); again {
		t.Fatal("an acceptance said twice")
	}
	if _, again := m.Answer(x, false, t0); !again || m.Refused() != 0 {
		t.Fatal("x accepting again not said")
	}
	// A new episode is said again.
	m.Answer(y, true, t0)
	if first, _ := m.Answer(x, true, t0); first {
		t.Fatal("the second refusal of an episode said")
	}
	if m.Refused() != 2 {
		t.Fatalf("refused %d, want 2", m.Refused())
	}
}
