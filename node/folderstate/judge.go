package folderstate

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// The states a folder's status reports (api.FolderStatus.State).
const (
	InSync    = "in-sync"
	Syncing   = "syncing"
	Held      = "held"
	OutOfSync = "out-of-sync"
	Scanning  = "scanning"
	Offline   = "offline"
	Error     = "error"
)

// Problem is a fault of the whole folder: why, since when, and its code.
type Problem struct {
	Code    string
	Message string
	Since   time.Time
}

// Facts are what the agent knows of one vault's folder at one moment.
// Each list is as its owner reports it; Judge orders and caps nothing but
// the skipped paths.
type Facts struct {
	// Stopped is the folder guard's stop (the folder's root or marker is
	// gone or not the one the vault knows), nil while it runs.
	Stopped *Problem
	// HomeFull is weft's own home disk refusing writes, nil when it has
	// room.
	HomeFull *Problem
	// Scanning is set while a scan runs; Scanned once the first full scan
	// since the start has completed.
	Scanning, Scanned bool
	// Pending is what this device must still do itself: paths to apply
	// and chunks to fetch.
	Pending int
	// Held lists deletions the mass-delete guard holds for the user.
	Held []api.PathMessage
	// Damaged lists files found rotten that are not written again yet.
	Damaged []api.PathMessage
	// ApplyErrs is each path's last apply error.
	ApplyErrs map[string]string
	// Skipped is each path the last scans skipped and will skip again
	// until the user acts, with why.
	Skipped map[string]string
	// RelayFull lists relays whose quota is full while they lack entries.
	RelayFull []api.PathMessage
	// Unwatched lists the parts of the folder only rescans see.
	Unwatched []api.PathMessage
	// LogFault is the most serious fault of the vault's logs, if any:
	// this device revoked, its membership lost, its own log forked, the
	// membership forked. Nothing the device reports is in sync then.
	LogFault *api.PathMessage
	// Unconfirmed counts local changes that wait for this device's own
	// log to be confirmed whole before they are recorded, and why.
	Unconfirmed       int
	UnconfirmedReason string
	// Alone is set when the vault has other members and none is
	// connected.
	Alone bool
}

// Verdict is what the folder's status says.
type Verdict struct {
	State  string
	Error  string            // the error the state names, for State == Error
	Errors []api.PathMessage // never nil
}

// MaxSkippedShown bounds the skipped paths status lists one by one; the
// rest are counted in one last item.
const MaxSkippedShown = 100

// Judge turns facts into the folder's state and errors. Precedence, most
// serious first:
//
//  1. a fault of the logs (revoked, membership lost, a fork): error;
//  2. the folder stopped, then weft's home disk full: error;
//  3. a scan running or the first one not done: scanning;
//  4. an error that needs the user (a full disk, a permission, a
//     read-only file system): error;
//  5. deletions held by the mass-delete guard: held;
//  6. a damaged file nothing is writing again: error;
//  7. anything pending: syncing;
//  8. paths that cannot sync, a relay that takes nothing, parts of the
//     folder only rescans see: out-of-sync;
//  9. otherwise in-sync; then local changes waiting for the own log make
//     it syncing, and no member connected makes it offline.
//
// Errors lists, in this order: the stop, the home disk, held deletions,
// damaged files, apply errors by path, skipped paths, full relays,
// unwatched parts, then the log's fault or its unconfirmed changes.
func Judge(f Facts) Verdict {
	out := Verdict{Errors: []api.PathMessage{}}
	add := func(ms ...api.PathMessage) { out.Errors = append(out.Errors, ms...) }
	if f.Stopped != nil {
		add(f.Stopped.message())
	}
	if f.HomeFull != nil {
		add(api.PathMessage{Code: api.CodeHomeDiskFull, Reason: f.HomeFull.Message, Since: Since(f.HomeFull.Since)})
	}
	add(f.Held...)
	add(f.Damaged...)
	for _, p := range slices.Sorted(maps.Keys(f.ApplyErrs)) {
		add(api.PathMessage{Code: ErrorCode(f.ApplyErrs[p]), Path: p, Reason: f.ApplyErrs[p]})
	}
	skipped := skippedMessages(f.Skipped)
	add(skipped...)
	add(f.RelayFull...)
	add(f.Unwatched...)
	switch {
	case f.Stopped != nil:
		out.State, out.Error = Error, f.Stopped.Message
	case f.HomeFull != nil:
		out.State, out.Error = Error, f.HomeFull.Message
	case f.Scanning || !f.Scanned:
		out.State = Scanning
	case stuck(out.Errors) != "":
		out.State, out.Error = Error, stuck(out.Errors)
	case len(f.Held) > 0:
		out.State = Held
	case len(f.Damaged) > 0 && f.Pending == 0:
		// A damaged file that is not being written again (it could not
		// be moved aside): nothing will fix it without the user.
		out.State, out.Error = Error, f.Damaged[0].Path+": "+f.Damaged[0].Reason
	case f.Pending > 0:
		out.State = Syncing
	case len(skipped) > 0 || len(f.RelayFull) > 0 || len(f.Unwatched) > 0:
		// Everything else is done, but these paths cannot sync, a relay
		// takes none of what it lacks, or changes in part of the folder
		// are seen only by rescans.
		out.State = OutOfSync
	default:
		out.State = InSync
	}
	switch {
	case f.LogFault != nil:
		add(*f.LogFault)
		out.State, out.Error = Error, f.LogFault.Reason
	case f.Unconfirmed > 0:
		add(api.PathMessage{Code: api.CodeLogUnconfirmed,
			Reason: fmt.Sprintf("%d local changes wait to be recorded: %s", f.Unconfirmed, f.UnconfirmedReason)})
		if out.State == InSync {
			out.State = Syncing
		}
	}
	if f.Alone && out.State == InSync {
		out.State = Offline
	}
	return out
}

func (p *Problem) message() api.PathMessage {
	return api.PathMessage{Code: p.Code, Reason: p.Message, Since: Since(p.Since)}
}

// ErrorCode is the code of a failed apply's reason, as status lists it.
func ErrorCode(reason string) string {
	switch doctor.ErrorKind(reason) {
	case "disk-full":
		return api.CodeFolderDiskFull
	case "read-only":
		return api.CodeReadOnly
	case "permission":
		return api.CodePermission
	case "chunk-unavailable":
		return api.CodeChunkUnavailable
	case "local-edit":
		return api.CodeLocalEdit
	}
	return api.CodeApplyFailed
}

// skippedMessages lists the skipped paths by name, each with its code,
// at most MaxSkippedShown of them and then one item counting the rest. A
// file that changed while it was read is left out: it settles by itself.
// Before, status said in-sync with errors [] while these paths never
// reached another device.
func skippedMessages(skipped map[string]string) []api.PathMessage {
	var out []api.PathMessage
	more := 0
	for _, p := range slices.Sorted(maps.Keys(skipped)) {
		code := api.CodeCannotSync
		switch doctor.ErrorKind(skipped[p]) {
		case "local-edit":
			continue
		case "too-large":
			code = api.CodeTooLarge
		case "permission":
			code = api.CodePathUnreadable
		}
		if len(out) == MaxSkippedShown {
			more++
			continue
		}
		out = append(out, api.PathMessage{Code: code, Path: p, Reason: skipped[p]})
	}
	if more > 0 {
		out = append(out, api.PathMessage{Code: api.CodeCannotSync, Reason: fmt.Sprintf("and %d more paths that cannot sync (`weft doctor` lists them)", more)})
	}
	return out
}

// stuck names the first error that needs the user to act (a full disk,
// a permission, a read-only file system) rather than a retry, or "".
func stuck(errs []api.PathMessage) string {
	for _, e := range errs {
		switch doctor.ErrorKind(e.Reason) {
		case "disk-full", "permission", "read-only":
			return e.Path + ": " + e.Reason
		}
	}
	return ""
}

// Since is t for PathMessage.Since: in UTC, nil when unknown.
func Since(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
