package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// A full disk under weft's home. The vault's database (its logs and folder
// index) and version store live in the home, often on another disk than the
// folder. When that disk fills, nothing new can be recorded (local edits)
// or received (peers' entries): before, a peer's entry that failed to be
// stored was reported as "refused an invalid entry from a peer", blaming
// the honest peer, and status said in-sync while a first sync had stopped
// at 1,528 of 4,000 files. Now the failure is the folder's error
// home-disk-full (status state error, doctor problem, event and metric),
// logged once with the home's path and free space, and weft retries by
// itself: pullers retry their streams, and once a probe write in the home
// succeeds the folder is rescanned and applies resume (they wait while the
// home is full: each would fail to record its index entry). Nothing is lost meanwhile: a peer's
// entry that was not stored is asked for again, and a local edit that was
// not recorded is still on disk, found by the rescan.

// errHomeFull marks an apply that failed only because its index record
// could not be written to the full home: the path stays pending, and is
// not reported (or blamed on the folder's disk) as its own error.
var errHomeFull = errors.New("the disk that holds weft's home is full")

// homeProbeEvery is how often, while the home's disk is full, weft checks
// whether it has room again.
const homeProbeEvery = 5 * time.Second

// homeProbeSize is how much a probe writes (and removes): room for a few
// entries and their index records, so that a disk with a few bytes free
// does not count as having room.
const homeProbeSize = 256 << 10

// homeFault is why writes to the vault's home fail; the zero value means
// they do not.
type homeFault struct {
	op      string // what failed: "storing a peer's entry", "recording local changes"
	message string
	since   time.Time
	probed  time.Time // last probe
}

// homeGuard holds the home's fault. It has its own lock, and full is read
// without it on every write to the home and every apply. The vault logs,
// publishes and probes around it (setHomeFault, retryHome).
type homeGuard struct {
	full  atomic.Bool // fault is set
	mu    sync.Mutex  // guards fault
	fault homeFault
}

// set records the fault f (f.op == "": cleared), keeping a fault already
// set, and returns the fault before and after.
func (g *homeGuard) set(f homeFault) (was, now homeFault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	was = g.fault
	switch {
	case f.op == "":
		g.fault = homeFault{}
	case was.op == "":
		g.fault = f
	}
	g.full.Store(g.fault.op != "")
	return was, g.fault
}

// current returns the home's fault, if any.
func (g *homeGuard) current() (homeFault, bool) {
	if !g.full.Load() {
		return homeFault{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fault, g.fault.op != ""
}

// probeDue reports whether a probe for room is due at now, while the home
// is full, and if so counts it as made at now.
func (g *homeGuard) probeDue(now time.Time) (homeFault, bool) {
	if !g.full.Load() {
		return homeFault{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fault.op == "" || now.Sub(g.fault.probed) < homeProbeEvery {
		return homeFault{}, false
	}
	g.fault.probed = now
	return g.fault, true
}

// isDiskFull reports whether err says a disk (or a user's quota on it) is
// full. The message is checked too: goleveldb and some file systems do not
// keep the errno in the chain.
func isDiskFull(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, syscall.ENOSPC) || doctor.ErrorKind(err.Error()) == "disk-full"
}

// noteHomeWrite records the outcome of a write to the vault's home. A
// full disk sets the fault (logged and published once). Only the probe
// clears it (retryHome, with nil): on a nearly full disk small writes
// succeed between failing ones, and clearing on each made the fault, its
// log lines and events flap. Other outcomes leave it as it is.
func (v *vault) noteHomeWrite(op string, err error) {
	if err == nil || !isDiskFull(err) {
		return
	}
	v.setHomeFault(op, err)
}

// setHomeFault sets (err != nil) or clears the home's fault, and logs and
// publishes a change.
func (v *vault) setHomeFault(op string, err error) {
	var f homeFault
	if err != nil && !v.home.full.Load() {
		free, _ := diskSpace(v.cfg.Dir)
		f = homeFault{op: op, since: v.n.now(), probed: v.n.now(),
			message: fmt.Sprintf("the disk that holds weft's home (%s) is full (%s free): %s failed, and nothing new can be recorded or received until it has room", v.cfg.Dir, doctor.HumanSize(free), op)}
	} else if err != nil {
		return // set already; set would keep it
	}
	was, now := v.home.set(f)
	switch {
	case err == nil && was.op != "":
		v.log.Info("the disk that holds weft's home has room again: recording and receiving resume", "home", v.cfg.Dir, "was_full_since", was.since)
		v.n.events.Publish(api.Event{Type: api.EventFolderResumed, Folder: v.cfg.Folder, Kind: api.CodeHomeDiskFull})
	case err != nil && was.op == "":
		v.log.Error("the disk that holds weft's home is full; weft retries by itself once it has room", "home", v.cfg.Dir, "op", op, "err", err)
		v.n.events.Publish(api.Event{Type: api.EventError, Folder: v.cfg.Folder, Kind: api.CodeHomeDiskFull, Error: now.message})
	}
}

// retryHome runs on the folder's recheck tick: while the home's disk is
// full, it probes for room every homeProbeEvery, and once a probe write
// succeeds clears the fault and reports true, so that the caller rescans
// the folder (edits that could not be recorded are still on disk) and the
// pullers, which retry on their own, store what peers send again. A write
// that then fails sets the fault again.
func (v *vault) retryHome() bool {
	f, due := v.home.probeDue(v.n.now())
	if !due {
		return false
	}
	if err := probeWrite(v.cfg.Dir, homeProbeSize); err != nil {
		return false
	}
	v.setHomeFault(f.op, nil)
	v.n.kickPullers(v)
	v.kick() // applies wait while the home is full (reconcileLoop)
	return true
}

// probeWrite writes size bytes to a new file in dir, syncs it and removes
// it: whether dir's disk has that much room now.
func probeWrite(dir string, size int) error {
	f, err := os.CreateTemp(dir, ".weft-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	defer os.Remove(name)
	_, err = f.Write(make([]byte, size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("probing %s: %w", filepath.Dir(name), err)
	}
	return nil
}
