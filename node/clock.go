package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/weftsync/weft/node/clock"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// Clocks (docs/sync.md, "Clocks"): the rules and the measurement are
// node/clock's; this file runs them over the agent's connections and
// dates entries with the result.

// ProtoClock is the stream protocol that measures a member's clock.
const ProtoClock p2pprotocol.ID = wire.ProtoClock

// vaultNow is this device's clock corrected against its members': the
// physical part of the entries' hybrid logical clock and the meaning of
// "now" for `restore --at -2h`.
func (n *Node) vaultNow() time.Time {
	now := n.now()
	return now.Add(n.clocks.Correction(now))
}

// ClockCorrection is how far this device moves its own clock to date the
// entries it writes and to read `restore --at` times: the median of its
// members' measured clock offsets, this device counting as 0 (docs/sync.md,
// "Clocks"). It is 0 until a member has been measured.
func (n *Node) ClockCorrection() time.Duration { return n.clocks.Correction(n.now()) }

// nextEntryTime returns the Time for the next entry this device writes in
// v, in unix ms: the corrected clock, or just above the latest time seen
// in v's entries when that is not below it (and not more than
// clock.MaxAhead past it). v.mu must not be held.
func (v *vault) nextEntryTime() int64 {
	now := v.agent.vaultNow().UnixMilli()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.view.HLC = clock.HLCNext(v.view.HLC, now)
	return v.view.HLC
}

// clockLoop measures every connected member's clock when it connects
// (onConnected wakes it) and every clock.ProbeEvery after, until ctx ends:
// it looks every clock.CheckEvery while a connected member has no current
// measurement, else every clock.CheckIdle.
func (n *Node) clockLoop(ctx context.Context) {
	t := time.NewTimer(clock.CheckEvery)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		next := clock.CheckIdle
		for _, d := range n.membersToClock() {
			if !n.clocks.Measured(d, n.now()) {
				next = clock.CheckEvery
			}
			if !n.clocks.Due(d, n.now()) {
				continue
			}
			wg.Go(func() {
				if _, err := n.measureClock(ctx, d); err != nil && ctx.Err() == nil {
					n.log.Debug("measuring clock", "peer", d, "err", err)
				}
			})
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.clockWake:
		}
	}
}

// membersToClock lists the devices (not relays) of every vault served
// here that are connected now, each once.
func (n *Node) membersToClock() []keys.DeviceID {
	var out []keys.DeviceID
	for _, v := range n.vaultsNow() {
		for _, c := range n.connectedMembers(v) {
			if v.roster.IsMember(c.dev) && !slices.Contains(out, c.dev) {
				out = append(out, c.dev)
			}
		}
	}
	return out
}

// errNoSharedVault means a device shares no vault served here.
var errNoSharedVault = errors.New("no vault shared with the device")

// measureClock measures d's clock now over /weft/clock/1 and records the
// result.
func (n *Node) measureClock(ctx context.Context, d keys.DeviceID) (clock.Sample, error) {
	var v *vault
	for _, w := range n.vaultsNow() {
		if w.roster.IsMember(d) {
			v = w
			break
		}
	}
	if v == nil {
		return clock.Sample{}, errNoSharedVault
	}
	pid, err := PeerIDOf(d)
	if err != nil {
		return clock.Sample{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, clock.Timeout)
	defer cancel()
	s, err := n.host.NewStream(ctx, pid, ProtoClock)
	if err != nil {
		return clock.Sample{}, fmt.Errorf("opening clock stream: %w", err)
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	f := n.outboundConn(s, d)
	if err := f.OpenHello(v.id); err != nil {
		_ = s.Reset()
		return clock.Sample{}, fmt.Errorf("clock hello: %w", err)
	}
	best, err := clock.Measure(f, n.now)
	if err != nil {
		return clock.Sample{}, err
	}
	n.clocks.Set(d, best)
	return best, nil
}

// handleClock answers a clock stream: the Hello step as on every stream
// (only members and relays of a vault served here get further), then
// clock.Answer.
func (n *Node) handleClock(s network.Stream) {
	defer s.Close()
	f, _, _, ok := n.openStream(s) // the Hello step, bounded and counted as on every stream
	if !ok {
		return
	}
	_ = s.SetDeadline(time.Now().Add(clock.Timeout))
	clock.Answer(f, n.now)
}

// skewFields converts a clock measurement to PeerDiagnosis fields.
func skewFields(s clock.Sample) (*int64, *float64) {
	ms, errMs := s.Millis()
	return &ms, &errMs
}
