package node

import (
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/keys"
)

// Hooks that the scanning, fetching and applying code calls to report
// what it does to `weft events`, `weft doctor` and the metrics. Each is
// cheap, never blocks, and is a no-op for what no one watches.

// folderReport reports what happens in one folder (vault.report): to the
// node's event bus, and to the running API's monitor when there is one.
type folderReport struct {
	folder  string
	events  *api.Bus
	monitor func() *monitor // returns nil while the API does not run
}

// mon is the running API's monitor, or nil.
func (r folderReport) mon() *monitor {
	if r.monitor == nil {
		return nil
	}
	return r.monitor()
}

// localChange reports one change the scanner found on disk.
func (r folderReport) localChange(c folder.Change) {
	r.events.Publish(api.Event{Type: api.EventLocalChange, Folder: r.folder, Path: c.Path, Kind: c.Type.String()})
}

// scan reports a finished scan of paths (nil: the whole folder) that
// started at start: its duration, and what it skipped or found unsettled.
func (r folderReport) scan(start time.Time, paths []string, res folder.Result, err error) {
	if m := r.mon(); m != nil && err == nil {
		m.scans.Scanned(r.folder, paths, res, time.Now())
		m.metrics.ObserveScan(r.folder, scanScope(paths), time.Since(start))
	}
	for _, s := range res.Skipped {
		r.events.Publish(api.Event{Type: api.EventError, Folder: r.folder, Path: s.Path, Kind: "scan", Error: s.Err.Error()})
	}
}

func scanScope(paths []string) string {
	if paths == nil {
		return "full"
	}
	return "paths"
}

// transfer reports the start of a chunk transfer from dev and returns
// the function that reports its end.
func (r folderReport) transfer(dev keys.DeviceID, chunks int) (finished func(got int, bytes int64, err error)) {
	start := time.Now()
	r.events.Publish(api.Event{Type: api.EventTransferStarted, Folder: r.folder, Peer: dev.String(), Count: chunks})
	return func(got int, bytes int64, err error) {
		ev := api.Event{Type: api.EventTransferFinished, Folder: r.folder, Peer: dev.String(), Count: got, Bytes: bytes}
		if err != nil {
			ev.Error = err.Error()
		}
		if m := r.mon(); m != nil {
			m.metrics.ObserveTransfer(r.folder, time.Since(start))
		}
		r.events.Publish(ev)
	}
}

// apply reports how long reconciling one path took.
func (r folderReport) apply(start time.Time) {
	if m := r.mon(); m != nil {
		m.metrics.ObserveApply(r.folder, time.Since(start))
	}
}

// watcherRescan reports that the watcher lost events (an inotify
// overflow, too many pending paths, a watch it could not add) and asked
// for a full rescan.
func (r folderReport) watcherRescan() {
	if m := r.mon(); m != nil {
		m.scans.WatcherRescan(r.folder)
	}
	r.events.Publish(api.Event{Type: api.EventWatcherRescan, Folder: r.folder})
}

// watcherRunning clears a watcher failure once a new watcher runs
// (after a stopped folder came back).
func (r folderReport) watcherRunning() {
	if m := r.mon(); m != nil {
		m.scans.WatcherFailed(r.folder, "")
	}
}

// watcherFailed reports that the watcher could not start or stopped:
// changes are then found only by the periodic rescan.
func (r folderReport) watcherFailed(err error) {
	if m := r.mon(); m != nil {
		m.scans.WatcherFailed(r.folder, err.Error())
	}
	r.events.Publish(api.Event{Type: api.EventError, Folder: r.folder, Kind: "watcher", Error: err.Error()})
}
