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
// both forms show the files and bytes the folders hold now.
func showProgress(ctx context.Context, n *node.Node, out *os.File) {
	tty := term.IsTerminal(int(out.Fd()))
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var (
		bar      *mpb.Bar
		progress *mpb.Progress
		start    int // applied count when the long sync began
		lastLine time.Time
		active   bool
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
		for _, f := range n.Status().Folders {
			pending += f.Pending
			files += f.Files
			bytes += f.Bytes
		}
		inFolder.Store(fmt.Sprintf("%d files (%s) in the folder", files, doctor.HumanSize(bytes)))
		done := int(applied.Load())
		switch {
		case !active && pending >= progressThreshold:
			active, start = true, done
			if tty {
				progress = mpb.NewWithContext(ctx, mpb.WithOutput(out), mpb.WithWidth(40))
				bar = progress.AddBar(int64(pending),
					mpb.PrependDecorators(decor.Name("syncing "), decor.CountersNoUnit("%d / %d items")),
					mpb.AppendDecorators(decor.Percentage(), decor.Any(func(decor.Statistics) string {
						return "  " + inFolder.Load().(string)
					})))
			}
		case !active:
			continue
		}
		total := done - start + pending
		if tty {
			bar.SetTotal(int64(total), pending == 0)
			bar.SetCurrent(int64(done - start))
		} else if time.Since(lastLine) >= 2*time.Second || pending == 0 {
			fmt.Fprintf(out, "syncing: %d of %d items applied, %d files (%s) in the folder\n", done-start, total, files, doctor.HumanSize(bytes))
			lastLine = time.Now()
		}
		if pending == 0 {
			if progress != nil {
				progress.Wait()
				progress, bar = nil, nil
			}
			active = false
		}
	}
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
