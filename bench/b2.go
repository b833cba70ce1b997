package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weftsync/weft/node/api"
)

// runB2: 1 KiB appended to a note on A, K times; each time the clock runs
// from the write on A until B's copy holds the new bytes.
func runB2(rc *runCtx) error {
	z := sizesFor(rc.cfg.Scale)
	a, b, err := pair(rc)
	if err != nil {
		return err
	}
	defer a.kill()
	defer b.kill()
	r := rng(uint64(rc.run) + 7)
	content := make([]byte, 2<<10)
	_, _ = r.Read(content)
	pa := filepath.Join(a.folder, "journal", "note.md")
	pb := filepath.Join(b.folder, "journal", "note.md")
	if err := os.MkdirAll(filepath.Dir(pa), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(pa, content, 0o644); err != nil {
		return err
	}
	if err := b.up(rc.ctx, false); err != nil {
		return err
	}
	if _, err := waitContent(rc.ctx, pb, content, z.syncTimeout); err != nil {
		return err
	}
	for _, d := range []*device{a, b} {
		if _, err := d.waitState(rc.ctx, time.Minute, 20*time.Millisecond, inSync(1)); err != nil {
			return err
		}
	}
	ectx, cancel := context.WithCancel(rc.ctx)
	defer cancel()
	written, err := a.events(ectx, api.EventEntryWritten)
	if err != nil {
		return err
	}
	_, recv0, err := b.wire(rc.ctx)
	if err != nil {
		return err
	}
	var e2e, wire []float64
	for k := range z.edits {
		add := make([]byte, 1<<10)
		_, _ = r.Read(add)
		content = append(content, add...)
		// Drop events from before this write.
		for len(written) > 0 {
			<-written
		}
		t0 := time.Now()
		f, err := os.OpenFile(pa, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.Write(add)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		seen, err := waitContent(rc.ctx, pb, content, time.Minute)
		if err != nil {
			return fmt.Errorf("append %d: %w\n%s", k, err, b.logTail())
		}
		lat := seen.Sub(t0)
		e2e = append(e2e, ms(lat))
		rc.sample("B2 end-to-end latency (ms)", float64(k), ms(lat))
		// The entry-written event that recorded this append. Wall clock on
		// both sides: the event's time comes from A's clock, the same
		// machine's.
		select {
		case ev := <-written:
			w := seen.Round(0).Sub(ev.Time)
			wire = append(wire, ms(w))
			rc.sample("B2 wire latency (ms)", float64(k), ms(w))
		case <-time.After(2 * time.Second):
			rc.note("an entry-written event was missing; its wire time is left out")
		}
		if rest := z.spacing - time.Since(t0); rest > 0 {
			time.Sleep(rest)
		}
	}
	_, recv, err := b.wire(rc.ctx)
	if err != nil {
		return err
	}
	rc.add("end to end p50", "ms", percentile(e2e, 50))
	rc.add("end to end p95", "ms", percentile(e2e, 95))
	rc.add("wire p50", "ms", percentile(wire, 50))
	rc.add("wire p95", "ms", percentile(wire, 95))
	rc.add("bytes received by B per append", "KiB", float64(recv-recv0)/float64(z.edits)/1024)
	rc.note("wire = B's file holds the bytes minus A's entry-written event time (the entry is durable on A)")
	cancel()
	if err := a.stop(); err != nil {
		return err
	}
	return b.stop()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// waitContent polls path until it holds want and returns when it was seen.
// It stats in a tight loop and reads the file only when the size matches.
func waitContent(ctx context.Context, path string, want []byte, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(want)) {
			seen := time.Now()
			if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, want) {
				return seen, nil
			}
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		time.Sleep(500 * time.Microsecond)
	}
	return time.Time{}, fmt.Errorf("%s did not reach its %d bytes within %s", path, len(want), limit)
}
