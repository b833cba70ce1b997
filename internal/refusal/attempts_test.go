package refusal

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// TestAttemptsTotal: the total allowance holds however many identities
// try, and the identities tracked stay bounded.
func TestAttemptsTotal(t *testing.T) {
	s := NewAttempts()
	now := time.Unix(1_000_000, 0)
	allowed := 0
	for i := 0; i < 5000; i++ {
		var d keys.DeviceID
		d[0], d[1] = byte(i>>8), byte(i)
		if s.Allow(d, now) == nil {
			allowed++
		}
	}
	if allowed != AttemptsTotalBurst {
		t.Fatalf("got %d attempts allowed at one instant from 5000 identities, want %d", allowed, AttemptsTotalBurst)
	}
	if len(s.peers) > attemptPeersMax {
		t.Fatalf("tracking %d identities, want at most %d", len(s.peers), attemptPeersMax)
	}
	if err := s.Allow(keys.DeviceID{0xff}, now.Add(AttemptsTotalEvery)); err != nil {
		t.Fatalf("after the total refills by one: %v", err)
	}
}

// TestAttemptsPerPeer: one identity gets AttemptsPerPeerBurst attempts,
// then one more every AttemptsPerPeerEvery; another identity has its own.
func TestAttemptsPerPeer(t *testing.T) {
	a := NewAttempts()
	now := time.Unix(1_000_000, 0)
	x, y := keys.DeviceID{1}, keys.DeviceID{2}
	for i := range AttemptsPerPeerBurst {
		if err := a.Allow(x, now); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if a.Allow(x, now) == nil {
		t.Fatal("an attempt over the identity's burst allowed")
	}
	if err := a.Allow(y, now); err != nil {
		t.Fatalf("another identity: %v", err)
	}
	if err := a.Allow(x, now.Add(AttemptsPerPeerEvery)); err != nil {
		t.Fatalf("after one interval: %v", err)
	}
}
