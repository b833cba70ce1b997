package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/weftsync/weft/node/api"
)

// runB10: A and B hold n files in sync; B is stopped and started again;
// the clock runs from B's launch until its status says in sync with its
// initial scan done.
func runB10(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	a, b, ns, err := pairWithNotes(rc, z.restartSet, uint64(rc.run)+21)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	if _, err := waitNotes(b.folder, ns, z.syncTimeout); err != nil {
		return err
	}
	if _, err := b.waitState(rc.ctx, z.syncTimeout, 50*time.Millisecond, inSync(len(ns))); err != nil {
		return err
	}
	if err := b.stop(); err != nil {
		return err
	}
	sentA0, recvA0, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	answered := make(chan statusAnswer, 1)
	pollCtx, stopPoll := context.WithTimeout(rc.ctx, z.syncTimeout)
	defer stopPoll()
	go func() { answered <- firstStatus(pollCtx, b) }()
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	ready := time.Now()
	first := <-answered
	if first.err != nil {
		return first.err
	}
	wakeCtx, stopWake := context.WithCancel(rc.ctx)
	defer stopWake()
	wake, err := b.events(wakeCtx, api.EventScanned, api.EventReconciled, api.EventPeerStatus, api.EventPeerConnected)
	if err != nil {
		return err
	}
	if _, err := b.waitStateEvents(rc.ctx, z.syncTimeout, 5*time.Millisecond, wake, inSync(len(ns))); err != nil {
		return err
	}
	inSyncAt := time.Now()
	stopWake()
	// B's counters start at zero with the new process.
	sentB, recvB, err := b.wire(rc.ctx)
	if err != nil {
		return err
	}
	sentA, recvA, err := a.wire(rc.ctx)
	if err != nil {
		return err
	}
	u, err := b.usage()
	if err != nil {
		return err
	}
	rc.add("status answers from launch", "s", first.at.Sub(start).Seconds())
	rc.add("in sync from launch", "s", inSyncAt.Sub(start).Seconds())
	rc.add("in sync from ready", "s", inSyncAt.Sub(ready).Seconds())
	rc.add("sent by B", "KiB", float64(sentB)/1024)
	rc.add("received by B", "KiB", float64(recvB)/1024)
	rc.add("sent by A", "KiB", float64(sentA-sentA0)/1024)
	rc.add("received by A", "KiB", float64(recvA-recvA0)/1024)
	rc.add("CPU B", "s", u.CPUSeconds)
	rc.add("peak RSS B", "MiB", float64(u.PeakRSS)/(1<<20))
	rc.note("status answers: the first GET /v1/status that returns 200, polled every 5 ms from the launch (api.json read afresh each time)")
	rc.note("in sync: status folder state in-sync, initial_scan_done, nothing pending, every file counted (needs the peer connected); status asked on each scanned, reconciled, peer-status or peer-connected event (at most every 20 ms, a burst once), else every 2 µs per file counted")
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}

// statusAnswer is when an agent's status first answered, or why it did not.
type statusAnswer struct {
	at  time.Time
	err error
}

// firstStatus polls d's home for the api.json of the agent being launched
// and its status until one answers, every 5 ms, until ctx ends: how soon
// `weft status` works after a launch. A stale api.json (a killed agent's)
// names a port nobody answers on, or a token refused, and is read again.
func firstStatus(ctx context.Context, d *device) statusAnswer {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(filepath.Join(d.home, "api.json")); err == nil {
			var info apiInfo
			if json.Unmarshal(b, &info) == nil && info.Addr != "" {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+info.Addr+"/v1/status", nil)
				if err != nil {
					return statusAnswer{err: err}
				}
				req.Header.Set("Authorization", "Bearer "+info.Token)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return statusAnswer{at: time.Now()}
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return statusAnswer{err: fmt.Errorf("%s: status never answered: %w", d.name, ctx.Err())}
		case <-tick.C:
		}
	}
}
