package node

import (
	"fmt"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/node/homefull"
)

// A full disk under weft's home (node/homefull): the folder's error
// home-disk-full, logged once, retried by itself.

// errHomeFull marks an apply that failed only because its index record
// could not be written to the full home (homefull.ErrFull).
var errHomeFull = homefull.ErrFull

// noteHomeWrite records the outcome of a write to the vault's home. A
// full disk sets the fault (logged and published once). Only the probe
// clears it (retryHome, with nil): on a nearly full disk small writes
// succeed between failing ones, and clearing on each made the fault, its
// log lines and events flap. Other outcomes leave it as it is.
func (v *vault) noteHomeWrite(op string, err error) {
	if err == nil || !homefull.IsDiskFull(err) {
		return
	}
	v.setHomeFault(op, err)
}

// setHomeFault sets (err != nil) or clears the home's fault, and logs and
// publishes a change.
func (v *vault) setHomeFault(op string, err error) {
	var f homefull.Fault
	if err != nil && !v.home.Full() {
		free, _ := diskSpace(v.cfg.Dir)
		f = homefull.Fault{Op: op, Since: v.now(), Probed: v.now(),
			Message: fmt.Sprintf("the disk that holds weft's home (%s) is full (%s free): %s failed, and nothing new can be recorded or received until it has room", v.cfg.Dir, doctor.HumanSize(free), op)}
	} else if err != nil {
		return // set already; set would keep it
	}
	was, now := v.home.Set(f)
	switch {
	case err == nil && was.Op != "":
		v.log.Info("the disk that holds weft's home has room again: recording and receiving resume", "home", v.cfg.Dir, "was_full_since", was.Since)
		v.events.Publish(api.Event{Type: api.EventFolderResumed, Folder: v.cfg.Folder, Kind: api.CodeHomeDiskFull})
	case err != nil && was.Op == "":
		v.log.Error("the disk that holds weft's home is full; weft retries by itself once it has room", "home", v.cfg.Dir, "op", op, "err", err)
		v.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: api.CodeHomeDiskFull, Error: now.Message})
	}
}

// retryHome runs on the folder's recheck tick: while the home's disk is
// full, it probes for room every homefull.ProbeEvery, and once a probe write
// succeeds clears the fault and reports true, so that the caller rescans
// the folder (edits that could not be recorded are still on disk) and the
// pullers, which retry on their own, store what peers send again. A write
// that then fails sets the fault again.
func (v *vault) retryHome() bool {
	f, due := v.home.ProbeDue(v.now())
	if !due {
		return false
	}
	if err := homefull.ProbeWrite(v.cfg.Dir, homefull.ProbeSize); err != nil {
		return false
	}
	v.setHomeFault(f.Op, nil)
	v.agent.kickPullers(v)
	v.kick() // applies wait while the home is full (node/reconcile)
	return true
}
