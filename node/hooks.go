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

// noteLocalChange reports one change the scanner found on disk.
func (v *vault) noteLocalChange(c folder.Change) {
	v.n.events.Publish(api.Event{Type: api.EventLocalChange, Folder: v.cfg.Folder, Path: c.Path, Kind: c.Type.String()})
}

// noteScan reports a finished scan of paths (nil: the whole folder) that
// started at start: its duration, and what it skipped or found unsettled.
func (v *vault) noteScan(start time.Time, paths []string, res folder.Result, err error) {
	if m := v.n.monitor(); m != nil && err == nil {
		m.scans.Scanned(v.cfg.Folder, paths, res, time.Now())
		m.metrics.ObserveScan(v.cfg.Folder, scanScope(paths), time.Since(start))
	}
	for _, s := range res.Skipped {
		v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Path: s.Path, Kind: "scan", Error: s.Err.Error()})
	}
}

func scanScope(paths []string) string {
	if paths == nil {
		return "full"
	}
	return "paths"
}

// noteTransfer reports the start of a chunk transfer from dev and returns
// the function that reports its end.
func (v *vault) noteTransfer(dev keys.DeviceID, chunks int) (finished func(got int, bytes int64, err error)) {
	start := time.Now()
	v.n.events.Publish(api.Event{Type: api.EventTransferStarted, Folder: v.cfg.Folder, Peer: dev.String(), Count: chunks})
	return func(got int, bytes int64, err error) {
		ev := api.Event{Type: api.EventTransferFinished, Folder: v.cfg.Folder, Peer: dev.String(), Count: got, Bytes: bytes}
		if err != nil {
			ev.Error = err.Error()
		}
		if m := v.n.monitor(); m != nil {
			m.metrics.ObserveTransfer(v.cfg.Folder, time.Since(start))
		}
		v.n.events.Publish(ev)
	}
}

// noteApply reports how long reconciling one path took.
func (v *vault) noteApply(start time.Time) {
	if m := v.n.monitor(); m != nil {
		m.metrics.ObserveApply(v.cfg.Folder, time.Since(start))
	}
}

// noteWatcherRescan reports that the watcher lost events (an inotify
// overflow, too many pending paths, a watch it could not add) and asked
// for a full rescan.
func (v *vault) noteWatcherRescan() {
	if m := v.n.monitor(); m != nil {
		m.scans.WatcherRescan(v.cfg.Folder)
	}
	v.n.events.Publish(api.Event{Type: api.EventWatcherRescan, Folder: v.cfg.Folder})
}

// noteWatcherRunning clears a watcher failure once a new watcher runs
// (after a stopped folder came back).
func (v *vault) noteWatcherRunning() {
	if m := v.n.monitor(); m != nil {
		m.scans.WatcherFailed(v.cfg.Folder, "")
	}
}

// noteWatcherFailed reports that the watcher could not start or stopped:
// changes are then found only by the periodic rescan.
func (v *vault) noteWatcherFailed(err error) {
	if m := v.n.monitor(); m != nil {
		m.scans.WatcherFailed(v.cfg.Folder, err.Error())
	}
	v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: "watcher", Error: err.Error()})
}
