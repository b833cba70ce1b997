package bench

import (
	"encoding/json"
	"fmt"
	"time"
)

// relayVault is the start of every store-and-forward scenario: a relay,
// device A enrolled with it, running and connected to it, and (when
// asked) device B joined to A's vault but not started. a0 and r0 are A's
// and the relay's CPU and memory once that is done, so a scenario counts
// only its own work; m0 the relay's /metrics then when its chunks are in
// S3 (objScrape).
type relayVault struct {
	r      *relayProc
	a, b   *device // b is nil unless asked for
	a0, r0 procUsage
	m0     map[string]float64
}

// startRelayVault starts the relay and A (and joins B when withB is set)
// and waits until A's status shows the relay connected. On error nothing
// is left running.
func startRelayVault(rc *runCtx, withB bool) (v *relayVault, err error) {
	v = &relayVault{}
	if v.r, err = startRelay(rc); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			v.kill()
		}
	}()
	if withB {
		v.a, v.b, err = relayPair(rc, v.r)
	} else {
		v.a, err = relayDevice(rc, "a", v.r)
	}
	if err != nil {
		return nil, err
	}
	if err = waitRelayUp(rc.ctx, v.a); err != nil {
		return nil, err
	}
	if v.a0, err = v.a.usage(); err != nil {
		return nil, err
	}
	if v.r0, err = v.r.usage(); err != nil {
		return nil, err
	}
	if v.m0, err = rc.objScrape(v.r); err != nil {
		return nil, err
	}
	return v, nil
}

// kill ends every process of v that still runs (SIGKILL); the scenarios
// defer it and stop processes with SIGTERM on their success path.
func (v *relayVault) kill() {
	for _, d := range []*device{v.a, v.b} {
		if d != nil {
			d.kill()
		}
	}
	if v.r != nil {
		v.r.kill()
	}
}

// handover is what the second half of a store-and-forward run measured.
type handover struct {
	a, r1 procUsage     // A and the relay when the upload was done
	b, r2 procUsage     // B and the relay when B held everything
	down  time.Duration // from B's launch until arrived said so
}

// handOver is the second half of a store-and-forward run, once A's
// upload is done: it reads A's and the relay's usage, stops A (SIGTERM),
// launches B and waits for arrived (which polls B's folder and returns
// when B holds the data: B can only have got it from the relay), then
// reads B's and the relay's usage.
func (v *relayVault) handOver(rc *runCtx, arrived func() (time.Time, error)) (h handover, err error) {
	if h.a, err = v.a.usage(); err != nil {
		return h, err
	}
	if h.r1, err = v.r.usage(); err != nil {
		return h, err
	}
	if err = v.a.stop(); err != nil {
		return h, err
	}
	start := time.Now()
	if err = v.b.up(rc.ctx, false); err != nil {
		return h, err
	}
	seen, err := arrived()
	if err != nil {
		// What B knew when it gave up: its folder's pending work and
		// errors, and whether it saw the relay holding everything.
		st, serr := v.b.status(rc.ctx)
		doc, _ := json.Marshal(st)
		return h, fmt.Errorf("device B (A offline, relay only): %w\nB's status (%v): %s\n%s", err, serr, doc, v.b.logTail())
	}
	h.down = seen.Sub(start)
	if h.b, err = v.b.usage(); err != nil {
		return h, err
	}
	if h.r2, err = v.r.usage(); err != nil {
		return h, err
	}
	return h, nil
}
