package refusal

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/weftsync/weft/protocol/keys"
)

// Attempt rates for the protocols strangers are meant to use (pairing,
// recovery). A person pairing or recovering a device makes one attempt, a
// few if they mistype; a program guessing is held to the total.
const (
	AttemptsPerPeerBurst = 5
	AttemptsPerPeerEvery = 10 * time.Second // one more attempt per identity per interval
	AttemptsTotalBurst   = 30
	AttemptsTotalEvery   = 500 * time.Millisecond
	// attemptPeersMax bounds the identities tracked; past it (a flood of
	// fresh identities) attempts are refused until old ones refill.
	attemptPeersMax = 1024
)

// Attempts limits strangers' attempts per identity and in total. Its
// methods are safe for concurrent use; the time comes in as an argument.
type Attempts struct {
	mu    sync.Mutex
	total *rate.Limiter
	peers map[keys.DeviceID]*rate.Limiter
}

// NewAttempts returns limits with every allowance whole.
func NewAttempts() *Attempts {
	return &Attempts{
		total: rate.NewLimiter(rate.Every(AttemptsTotalEvery), AttemptsTotalBurst),
		peers: map[keys.DeviceID]*rate.Limiter{},
	}
}

// Allow takes one attempt of dev at now from the limits, or says which
// limit refuses it (then nothing is taken).
func (a *Attempts) Allow(dev keys.DeviceID, now time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	lim := a.peers[dev]
	if lim == nil {
		if len(a.peers) >= attemptPeersMax {
			// Forget identities whose allowance is whole again: they
			// are no different from new ones.
			for d, l := range a.peers {
				if l.TokensAt(now) >= AttemptsPerPeerBurst {
					delete(a.peers, d)
				}
			}
			if len(a.peers) >= attemptPeersMax {
				return errors.New("too many identities attempting at once")
			}
		}
		lim = rate.NewLimiter(rate.Every(AttemptsPerPeerEvery), AttemptsPerPeerBurst)
		a.peers[dev] = lim
	}
	if lim.TokensAt(now) < 1 {
		return fmt.Errorf("more than %d attempts from this identity (one more every %s)", AttemptsPerPeerBurst, AttemptsPerPeerEvery)
	}
	if !a.total.AllowN(now, 1) {
		return fmt.Errorf("more than %d attempts in total (one more every %s)", AttemptsTotalBurst, AttemptsTotalEvery)
	}
	lim.AllowN(now, 1)
	return nil
}
