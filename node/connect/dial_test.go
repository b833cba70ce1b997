package connect

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/protocol/keys"
)

// fakeDialer is a network of targets the test decides: each dial is
// handed to the test, which answers it.
type fakeDialer struct {
	mu        sync.Mutex
	now       time.Time
	targets   []DialTarget
	connected map[keys.DeviceID]bool
	fails     map[keys.DeviceID]bool
	dials     chan dialed
}

type dialed struct {
	dev   keys.DeviceID
	addrs int
}

func (f *fakeDialer) Targets() []DialTarget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]DialTarget(nil), f.targets...)
}

func (f *fakeDialer) Connected(d keys.DeviceID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connected[d]
}

func (f *fakeDialer) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeDialer) Connect(ctx context.Context, d keys.DeviceID, addrs []ma.Multiaddr) error {
	f.mu.Lock()
	fail := f.fails[d]
	if !fail {
		f.connected[d] = true
	}
	f.mu.Unlock()
	select {
	case f.dials <- dialed{d, len(addrs)}:
	case <-ctx.Done():
	}
	if fail {
		return errors.New("unreachable")
	}
	return nil
}

func (f *fakeDialer) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// expect waits for the loop's next dial, waking it until the dial comes
// (a round may already be under way when the test changes what it sees),
// and checks it is of dev.
func (f *fakeDialer) expect(t *testing.T, wake chan struct{}, dev keys.DeviceID) dialed {
	t.Helper()
	for range 1000 {
		select {
		case d := <-f.dials:
			if d.dev != dev {
				t.Fatalf("dialled %+v, want %v", d, dev)
			}
			return d
		case wake <- struct{}{}:
		case <-time.After(20 * time.Second): // a bound on a hang
			t.Fatal("no dial")
		}
	}
	t.Fatalf("no dial of %v in 1000 rounds", dev)
	return dialed{}
}

// none checks that the loop dials nothing over looks rounds (a wake is
// taken only between rounds, and a dial blocks until the test takes it).
func (f *fakeDialer) none(t *testing.T, wake chan struct{}, looks int) {
	t.Helper()
	for range looks {
		select {
		case wake <- struct{}{}: // taken between rounds: the last round dialled nothing
		case d := <-f.dials:
			t.Fatalf("dialled %+v", d)
		case <-time.After(20 * time.Second): // a bound on a hang
			t.Fatal("the loop did not look")
		}
	}
}

// The loop dials every missing target at its parsed addresses, one that
// fails not again until its backoff is over, one that connected not at
// all; with every target connected it dials nothing until woken and a
// target is missing again.
func TestDialLoop(t *testing.T) {
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	f := &fakeDialer{
		now: time.Unix(1_800_000_000, 0),
		targets: []DialTarget{
			{Device: a, Addrs: []string{"/ip4/127.0.0.1/tcp/4001", "not an address"}},
			{Device: b, Addrs: []string{"/ip4/127.0.0.1/tcp/4002"}},
		},
		connected: map[keys.DeviceID]bool{}, fails: map[keys.DeviceID]bool{b: true},
		dials: make(chan dialed),
	}
	wake := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		DialLoop(ctx, f, wake, DialTimes{Missing: time.Hour, Idle: time.Hour, Timeout: time.Minute})
		close(done)
	}()
	defer func() { cancel(); <-done }()

	if d := f.expect(t, wake, a); d.addrs != 1 {
		t.Fatalf("first dial %+v, want a at its one parsed address", d)
	}
	f.expect(t, wake, b)
	// b failed: not due again within its first backoff (1 s), a connected.
	f.none(t, wake, 3)
	f.set(func() { f.now = f.now.Add(redialMin) })
	f.expect(t, wake, b)
	// Everything connected: no dial, however often woken.
	f.set(func() { f.connected[b] = true })
	f.none(t, wake, 3)
	// a goes away: it is dialled at the next look.
	f.set(func() { f.connected[a] = false })
	f.expect(t, wake, a)
}
