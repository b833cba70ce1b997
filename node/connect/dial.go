package connect

import (
	"context"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/protocol/keys"
)

// DialTarget is a member or relay the device keeps connected, with the
// addresses it knows for it (multiaddr strings; the ones that do not parse
// are skipped).
type DialTarget struct {
	Device keys.DeviceID
	Addrs  []string
}

// Dialer is what the dial loop needs of the agent.
type Dialer interface {
	// Targets lists the members and relays to keep connected, of every
	// vault (this device left out). A device may be listed more than once.
	Targets() []DialTarget
	// Connected reports whether the device is connected now.
	Connected(d keys.DeviceID) bool
	// Connect dials the device at addrs.
	Connect(ctx context.Context, d keys.DeviceID, addrs []ma.Multiaddr) error
	Now() time.Time
}

// DialTimes are the dial loop's pace.
type DialTimes struct {
	// Missing is how often it looks while a target is not connected.
	Missing time.Duration
	// Idle is how often it looks unasked while every target is
	// connected: a disconnection, a new address and a membership change
	// wake it at once, so this is only a net.
	Idle time.Duration
	// Timeout bounds one dial.
	Timeout time.Duration
}

// DefaultDialTimes: every second while a peer is missing, every 30 s
// otherwise (looking every second woke an idle agent 60 times a minute for
// nothing: issue 16's idle CPU), 5 s a dial.
var DefaultDialTimes = DialTimes{Missing: time.Second, Idle: 30 * time.Second, Timeout: 5 * time.Second}

// DialLoop keeps trying to connect to every target at the addresses known
// for it, each device on its own backoff (Redial): it looks every
// t.Missing while one is not connected, else when woken or every t.Idle.
// It returns when ctx ends; its caller owns it.
func DialLoop(ctx context.Context, d Dialer, wake <-chan struct{}, t DialTimes) {
	sched := NewRedial()
	wait := time.NewTimer(t.Missing)
	defer wait.Stop()
	for {
		missing := false
		for _, tg := range d.Targets() {
			if d.Connected(tg.Device) {
				continue
			}
			missing = true
			if !sched.Due(tg.Device, d.Now()) {
				continue
			}
			var addrs []ma.Multiaddr
			for _, a := range tg.Addrs {
				if m, err := ma.NewMultiaddr(a); err == nil {
					addrs = append(addrs, m)
				}
			}
			dctx, cancel := context.WithTimeout(ctx, t.Timeout)
			err := d.Connect(dctx, tg.Device, addrs)
			cancel()
			if err != nil {
				sched.Failed(tg.Device, d.Now())
				continue
			}
			sched.Succeeded(tg.Device)
		}
		next := t.Missing
		if !missing {
			next = t.Idle
		}
		wait.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		case <-wake:
		}
	}
}
