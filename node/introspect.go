package node

import (
	"slices"

	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/node/record"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Read-only views of a vault's derived state for status, doctor and
// metrics. Each asks the engine's loop once and takes v.mu once, and
// copies what it returns, so callers never hold a lock while they do IO
// or format output.

// vaultView is a consistent copy of a vault's counters and problem lists.
type vaultView struct {
	scanning, scanned bool
	toApply, toFetch  int
	pendingBytes      int64 // engine.BytesToWrite of the pass, less what it wrote
	files, dirs       int
	bytes             int64
	conflicts         []string          // conflict copies present, sorted
	errs              map[string]string // path -> last apply error
	dirty             []string          // paths marked for reconciliation, sorted
}

func (v *vault) counts() vaultView { return v.viewOf(true) }

// summary is counts without the dirty list (nil), for status: after a
// restart or a large change the dirty set can hold every path, and status
// needs only its size, which toApply already counts.
func (v *vault) summary() vaultView { return v.viewOf(false) }

// viewOf builds the view, with the dirty list only if withDirty.
func (v *vault) viewOf(withDirty bool) vaultView {
	out := vaultView{errs: map[string]string{}}
	v.mu.Lock()
	out.scanning, out.scanned = v.scanning, v.scanned
	out.toFetch = v.pending.toFetch
	out.pendingBytes = max(0, v.pending.passBytes-v.pending.written.Load())
	// Kept as the index changes (memindex), not walked here.
	out.files, out.dirs, out.bytes = v.index.Files(), v.index.Dirs(), v.index.Bytes()
	out.conflicts = v.index.ConflictCopies()
	v.mu.Unlock()
	// Asked after: the engine then has every path touched by what the
	// view above already held, so pending is never less than that state
	// implies.
	v.engine.Do(func(e *engine.Engine) {
		// The engine counts each pending path once: the dirty ones, or
		// the current pass's unsettled ones when they are more.
		out.toApply = e.Pending()
		e.Errs(func(p, err string) { out.errs[p] = err })
		if withDirty {
			out.dirty = e.DirtyPaths()
		}
	})
	return out
}

// heldElsewhere is the highest sequence number of this device's own log
// that some other device has said it holds.
func (v *vault) heldElsewhere() uint64 { return v.peers.HeldElsewhere(v.device.ID()) }

// toUpload counts the log entries this device holds that some connected
// member lacks, as far as that member's last LogStatus said: for each
// author, the largest shortfall over the connected members.
func (v *vault) toUpload(connected []keys.DeviceID) int {
	return v.peers.ToUpload(v.vector(), connected)
}

// pathState describes path p (slash-separated, relative to the folder).
func (v *vault) pathState(p string) (pv doctor.PathState) {
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		pv = v.pathStateLocked(e, p)
	})
	return pv
}

// pathStateLocked is pathState, run by the engine's loop with v.mu held.
func (v *vault) pathStateLocked(e *engine.Engine, p string) doctor.PathState {
	pv := doctor.PathState{Path: p}
	rec, had := v.index.Get(p)
	pv.Indexed = had
	pv.Dirty = e.IsDirty(p)
	pv.Err, _ = e.Err(p)
	hs := v.view.Graph.Heads(p)
	pv.Heads = len(hs)
	if len(hs) > 0 {
		if dec, err := e.Resolve(p, guardIndex{v}); err == nil {
			pv.Winner = dec.Winner.ID
			ver, _ := v.view.Body(dec.Winner.ID)
			pv.Kind, pv.Size, pv.Chunks = ver.Kind, ver.Size, len(ver.Chunks)
			for _, c := range ver.Chunks {
				if v.chunks.Has(c.CID) {
					pv.Local++
				}
			}
			pv.UpToDate = (had && rec.Version == pv.Winner) || (!had && ver.Kind == entry.KindDeletion)
		}
	}
	for _, q := range v.index.ConflictCopies() { // indexed files named like copies
		if record.IsConflictCopyOf(q, p) {
			pv.Conflicts = append(pv.Conflicts, q)
		}
	}
	slices.Sort(pv.Conflicts)
	return pv
}

// ignored reports whether p is excluded by the folder's ignore rules, as
// of the last scan.
func (v *vault) ignored(p string, isDir bool) bool {
	ig := v.scanner.Ignore()
	return ig != nil && ig.Match(p, isDir)
}
