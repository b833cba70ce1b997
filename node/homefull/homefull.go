package homefull

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weftsync/weft/node/doctor"
)

// ProbeEvery is how often, while the home's disk is full, weft checks
// whether it has room again.
const ProbeEvery = 5 * time.Second

// ProbeSize is how much a probe writes (and removes): room for a few
// entries and their index records, so that a disk with a few bytes free
// does not count as having room.
const ProbeSize = 256 << 10

// Fault is why writes to the vault's home fail; the zero value means they
// do not.
type Fault struct {
	Op      string // what failed: "storing a peer's entry", "recording local changes"
	Message string
	Since   time.Time
	Probed  time.Time // last probe
}

// Guard holds the home's fault. It has its own lock, and Full is read
// without it on every write to the home and every apply.
type Guard struct {
	full  atomic.Bool // fault is set
	mu    sync.Mutex  // guards fault
	fault Fault
}

// Full reports whether a fault is set.
func (g *Guard) Full() bool { return g.full.Load() }

// Set records the fault f (f.Op == "": cleared), keeping a fault already
// set, and returns the fault before and after.
func (g *Guard) Set(f Fault) (was, now Fault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	was = g.fault
	switch {
	case f.Op == "":
		g.fault = Fault{}
	case was.Op == "":
		g.fault = f
	}
	g.full.Store(g.fault.Op != "")
	return was, g.fault
}

// Current returns the home's fault, if any.
func (g *Guard) Current() (Fault, bool) {
	if !g.full.Load() {
		return Fault{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fault, g.fault.Op != ""
}

// ProbeDue reports whether a probe for room is due at now, while the home
// is full, and if so counts it as made at now.
func (g *Guard) ProbeDue(now time.Time) (Fault, bool) {
	if !g.full.Load() {
		return Fault{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fault.Op == "" || now.Sub(g.fault.Probed) < ProbeEvery {
		return Fault{}, false
	}
	g.fault.Probed = now
	return g.fault, true
}

// ErrFull marks an apply that failed only because its index record could
// not be written to the full home: the path stays pending, and is not
// reported (or blamed on the folder's disk) as its own error.
var ErrFull = errors.New("the disk that holds weft's home is full")

// IsDiskFull reports whether err says a disk (or a user's quota on it) is
// full. The message is checked too: goleveldb and some file systems do not
// keep the errno in the chain.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, syscall.ENOSPC) || doctor.ErrorKind(err.Error()) == "disk-full"
}

// ProbeWrite writes size bytes to a new file in dir, syncs it and removes
// it: whether dir's disk has that much room now.
func ProbeWrite(dir string, size int) error {
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
