package api

import (
	"time"

	"github.com/weftsync/weft/protocol"
)

// ScanRequest is the body of POST /v1/scan: an absolute path inside a
// synced folder, or empty for every folder.
type ScanRequest struct {
	Path string `json:"path,omitempty"`
}

// ScanResult is what one scan found.
type ScanResult struct {
	Folder string `json:"folder"`
	// Path is the scanned path relative to the folder ("" for all of it).
	Path string `json:"path"`
	// Files, Dirs and Bytes count what the scan saw on disk.
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Bytes int64 `json:"bytes"`
	// Changes counts the changes recorded; Changed lists the first 1000
	// of them, except the new files a whole-folder scan recorded while it
	// still walked (docs/folder.md, "New files recorded during the scan").
	Changes int          `json:"changes"`
	Changed []ScanChange `json:"changed"`
	// Unsettled lists files that changed while being read (recorded once
	// quiet); Skipped the paths that could not be taken, with why.
	Unsettled []string      `json:"unsettled"`
	Skipped   []PathMessage `json:"skipped"`
	// Ignored is true when Path is excluded by the ignore rules.
	Ignored bool  `json:"ignored,omitempty"`
	Millis  int64 `json:"millis"`
}

// ScanChange is one recorded change.
type ScanChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added, modified, deleted, kind-changed
}

// FolderRequest is the body of POST /v1/folders/reset and
// /v1/folders/guard.
type FolderRequest struct {
	Folder string `json:"folder"`
	// MassDelete is the new policy (guard only).
	MassDelete *protocol.MassDeletePolicy `json:"mass_delete,omitempty"`
}

// HeldDeletions is one folder's held deletions in one direction, as GET
// /v1/deletions and `weft deletions --json` show them.
type HeldDeletions struct {
	Folder string `json:"folder"`
	// Direction is "local" (deleted on this device, not recorded) or
	// "incoming" (deleted by another device, not applied here).
	Direction string    `json:"direction"`
	Files     int       `json:"files"` // files (and symlinks) among Paths
	Total     int       `json:"total"` // every path held, directories included
	Paths     []string  `json:"paths"` // sorted; at most maxHeldListed
	Since     time.Time `json:"since"`
	Policy    string    `json:"policy"` // the folder's mass-delete policy, in words
}

// DeletionsRequest is the body of POST /v1/deletions.
type DeletionsRequest struct {
	// Folder is the synced folder's path; empty means the one folder that
	// holds deletions.
	Folder string `json:"folder,omitempty"`
	// Action is "accept" (record the local deletions, apply the incoming
	// ones) or "reject" (bring the files back).
	Action string `json:"action"`
}

// DeletionsResult is the answer of POST /v1/deletions.
type DeletionsResult struct {
	Folder   string `json:"folder"`
	Action   string `json:"action"`
	Local    int    `json:"local"`    // local deletions recorded (accept) or files being brought back (reject)
	Incoming int    `json:"incoming"` // incoming deletions applied (accept) or files kept and sent back (reject)
}

// ScrubRequest is the body of POST /v1/scrub.
type ScrubRequest struct {
	// Path narrows the scrub to one synced folder, or a file or directory
	// in one (absolute); empty scrubs every folder.
	Path string `json:"path,omitempty"`
}

// ScrubResult is the answer of POST /v1/scrub and `weft scrub --json`.
type ScrubResult struct {
	Folder  string   `json:"folder"`
	Files   int      `json:"files"`   // files re-verified
	Bytes   int64    `json:"bytes"`   // bytes read
	Corrupt []string `json:"corrupt"` // damaged files found (moved aside, being repaired)
	Skipped int      `json:"skipped"` // changed since the last scan: left to the scanner
	// VersionBytes are the bytes of the local version store re-verified,
	// VersionCorrupt its chunks found damaged (dropped and fetched again
	// from the vault's devices).
	VersionBytes   int64   `json:"version_bytes"`
	VersionCorrupt int     `json:"version_corrupt"`
	Seconds        float64 `json:"seconds"`
}
