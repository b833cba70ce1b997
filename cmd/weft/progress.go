package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// progressThreshold is how many pending items make a sync "long" enough to
// show progress for.
const progressThreshold = 50

// showProgress reports a long sync until ctx ends: a progress bar when out
// is a terminal, a plain line every two seconds otherwise. It counts items
// applied since the sync became long against applied + still pending, and
// both forms show the rate of items applied, the bytes received from peers
// per second, the time left at that rate, and the files and bytes the
// folders hold now.
func showProgress(ctx context.Context, n *node.Node, out *os.File) {
	tty := term.IsTerminal(int(out.Fd()))
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var (
		bar      *mpb.Bar
		progress *mpb.Progress
		start    int // applied count when the long sync began
		lastLine time.Time
		lastTick = time.Now()
		active   bool
		rate     progressRate
	)
	applied := appliedCounter(ctx, n)
	var inFolder atomic.Value // string: files and bytes in the folders now, for the bar
	inFolder.Store("")
	for {
		select {
		case <-ctx.Done():
			if progress != nil {
				bar.Abort(false)
				progress.Wait()
			}
			return
		case <-tick.C:
		}
		pending, files, bytes := 0, 0, int64(0)
		st := n.Status()
		for _, f := range st.Folders {
			pending += f.Pending
			files += f.Files
			bytes += f.Bytes
		}
		var received int64
		for _, p := range st.Peers {
			received += p.BytesReceived
		}
		done := int(applied.Load())
		rate.sample(time.Now(), done, received)
		inFolder.Store(fmt.Sprintf("%s, %d files (%s) in the folder", rate.received(), files, doctor.HumanSize(bytes)))
		switch {
		case !active && pending >= progressThreshold:
			active, start = true, done
			if tty {
				progress = mpb.NewWithContext(ctx, mpb.WithOutput(out), mpb.WithWidth(40))
				bar = progress.AddBar(int64(pending),
					mpb.PrependDecorators(decor.Name("syncing "), decor.CountersNoUnit("%d / %d items")),
					mpb.AppendDecorators(decor.Percentage(), decor.Name("  "), decor.EwmaSpeed(0, "%.0f items", progressAge),
						decor.Name(", "), decor.EwmaETA(decor.ET_STYLE_GO, progressAge), decor.Name(" left"),
						decor.Any(func(decor.Statistics) string { return ", " + inFolder.Load().(string) })))
			}
		case !active:
			continue
		}
		total := done - start + pending
		if tty {
			bar.SetTotal(int64(total), pending == 0)
			bar.EwmaSetCurrent(int64(done-start), time.Since(lastTick))
		} else if time.Since(lastLine) >= 2*time.Second || pending == 0 {
			fmt.Fprintf(out, "syncing: %d of %d items applied, %d files (%s) in the folder; %s\n",
				done-start, total, files, doctor.HumanSize(bytes), rate.line(pending))
			lastLine = time.Now()
		}
		lastTick = time.Now()
		if pending == 0 {
			if progress != nil {
				progress.Wait()
				progress, bar = nil, nil
			}
			active = false
		}
	}
}

// progressAge is the age of the moving averages of the progress bar's
// rate and time left, in samples (four a second).
const progressAge = 30

// progressRate is the recent rate of a sync: items applied and bytes
// received per second, over the last progressWindow.
type progressRate struct {
	samples []rateSample
}

type rateSample struct {
	at       time.Time
	done     int
	received int64
}

// progressWindow is how far back the rates look.
const progressWindow = 10 * time.Second

// sample records the counts at t and forgets samples older than the
// window (keeping one to measure from).
func (r *progressRate) sample(t time.Time, done int, received int64) {
	r.samples = append(r.samples, rateSample{t, done, received})
	for len(r.samples) > 2 && t.Sub(r.samples[1].at) >= progressWindow {
		r.samples = r.samples[1:]
	}
}

// perSecond is the items and bytes per second over the window, and
// whether there is a window to measure yet.
func (r *progressRate) perSecond() (items, bytes float64, ok bool) {
	if len(r.samples) < 2 {
		return 0, 0, false
	}
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0, 0, false
	}
	return float64(last.done-first.done) / secs, float64(last.received-first.received) / secs, true
}

// received says the bytes received per second.
func (r *progressRate) received() string {
	_, b, ok := r.perSecond()
	if !ok {
		return "measuring"
	}
	return doctor.HumanSize(int64(b)) + "/s received"
}

// line is the plain form's rate clause: items per second, bytes received
// per second, and the time left for pending items at that rate.
func (r *progressRate) line(pending int) string {
	items, _, ok := r.perSecond()
	if !ok {
		return "measuring the rate"
	}
	left := "time left unknown"
	if items > 0 {
		left = "about " + time.Duration(float64(pending)/items*float64(time.Second)).Round(time.Second).String() + " left"
	}
	return fmt.Sprintf("%.0f items/s, %s, %s", items, r.received(), left)
}

// appliedCounter counts file-applied events from the node. It reads them
// through an event cursor, which loses none while the reader keeps within
// the bus's memory (api.RetainEvents); the in-process subscription drops
// what does not fit its buffer, which a burst of small files overran.
func appliedCounter(ctx context.Context, n *node.Node) *counter {
	c := &counter{}
	cur := n.API().EventCursor(0)
	go func() {
		for {
			ev, err := cur.Next(ctx)
			if err != nil {
				return // ctx ended
			}
			if ev.Type == api.EventApplied {
				c.Add(1)
			}
		}
	}()
	return c
}

type counter = atomic.Int64
