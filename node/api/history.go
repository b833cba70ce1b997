package api

import "time"

// History is the answer of GET /v1/history and `weft history --json`.
type History struct {
	Folder string `json:"folder"`
	Path   string `json:"path"` // relative to the folder, slash-separated
	// Versions are newest first: in an order consistent with the version
	// graph (a version comes before every version it supersedes), ties
	// broken by the author's time, then by ID.
	Versions []HistoryVersion `json:"versions"`
}

// HistoryVersion is one version of a path.
type HistoryVersion struct {
	// ID names the version for `weft restore --version`: the author's
	// short device ID, the sequence number of the author's entry and the
	// version's index in it ("7xQ9aB2c/12/0").
	ID string `json:"id"`
	// Time is the entry's time: when the author's device says it wrote
	// it, by its clock corrected against its members' (a hybrid logical
	// clock, node/clock.go). A claim, not a fact; see docs/history.md.
	Time time.Time `json:"time"`
	// Author is the device ID of the author, AuthorShort its short form,
	// Self whether it is this device, AuthorName its name as the
	// membership records it now ("" when it has none).
	Author      string `json:"author"`
	AuthorShort string `json:"author_short"`
	AuthorName  string `json:"author_name,omitempty"`
	Self        bool   `json:"self"`
	// Kind is file, dir, symlink or deletion.
	Kind string `json:"kind"`
	Size uint64 `json:"size"`
	// MTime is the modification time the author's file system recorded
	// (absent for deletions).
	MTime *time.Time `json:"mtime,omitempty"`
	// State is "current" (a head of the path), "deleted" (a head that is
	// a deletion) or "superseded".
	State string `json:"state"`
	// OnDisk says this device's folder holds this version now.
	OnDisk bool `json:"on_disk"`
	// Supersedes lists the IDs of the versions this one replaced.
	Supersedes []string `json:"supersedes"`
	// Hash is the BLAKE3 of a file's content (hex), for comparing versions.
	Hash string `json:"hash,omitempty"`
	// Content says where the content can come from: "inline" (carried
	// in the log itself, always restorable), "local" (every chunk is in a
	// file of this folder now), "versions" (every chunk is in this
	// folder or this device's version store), "peers" (some chunk must be
	// fetched: a device of the vault is connected and is asked, with any
	// connected relay), "relay" (the same, with only relays connected) or
	// "none" (no local store holds it and no device or relay of the vault
	// is connected: it cannot be restored now). Empty for dirs and
	// deletions. "peers" and "relay" say who is asked, not that they
	// still hold it: `weft restore --dry-run` asks them.
	Content string `json:"content,omitempty"`
}

// RestoreRequest is the body of POST /v1/restore.
type RestoreRequest struct {
	// Path is an absolute path inside a synced folder. Required unless
	// All is set; with All it narrows the restore to that folder or
	// subtree.
	Path string `json:"path,omitempty"`
	// Version is a HistoryVersion.ID of the path. Exclusive with At.
	Version string `json:"version,omitempty"`
	// At is RFC 3339, or relative to the agent's clock: "-2h", "-90m",
	// "-3d". The version current at that time is restored (see versionAt).
	At string `json:"at,omitempty"`
	// All restores every path (under Path, if given) as of At.
	All bool `json:"all,omitempty"`
	// DryRun lists what would change and changes nothing. It checks what
	// a restore checks, fetching (and dropping) the content no local
	// store holds, so what it promises is what a restore would do.
	DryRun bool `json:"dry_run,omitempty"`
	// Partial restores every path that can be restored when some cannot.
	// Without it a restore with any path that cannot be restored changes
	// nothing and its error names every such path.
	Partial bool `json:"partial,omitempty"`
}

// RestoreResult is the answer of POST /v1/restore and `weft restore
// --json`.
type RestoreResult struct {
	// At is the moment restored to, when the request gave one.
	At     *time.Time `json:"at,omitempty"`
	DryRun bool       `json:"dry_run"`
	// Changes are the paths changed (or that would change, on a dry run),
	// in the order they were written. Empty when everything already
	// matches.
	Changes []RestoreChange `json:"changes"`
	// Failed are the paths that cannot be restored (on a dry run, or with
	// Partial), each with the reason.
	Failed []RestoreFailure `json:"failed"`
}

// RestoreFailure is one path a restore cannot bring back.
type RestoreFailure struct {
	Folder string `json:"folder"`
	Path   string `json:"path"`
	From   string `json:"from,omitempty"` // the version that was to come back
	// Code is "unavailable" (no local store holds the content and no
	// connected device or relay sent it), "syncing" (the path has
	// versions not applied here yet) or "changed" (edited on disk since
	// its last scan).
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// RestoreChange is one path a restore changed.
type RestoreChange struct {
	Folder string `json:"folder"`
	Path   string `json:"path"`
	// Action is "restore" (an older content comes back) or "delete" (the
	// path did not exist then, or the version restored is a deletion).
	Action string `json:"action"`
	// From is the ID of the version whose content comes back ("" for a
	// delete); Kind and Size describe it.
	From string `json:"from,omitempty"`
	Kind string `json:"kind,omitempty"`
	Size uint64 `json:"size"`
	// Version is the ID of the new version that records the restore
	// (empty on a dry run).
	Version string `json:"version,omitempty"`
	// Content is where the content comes from (HistoryVersion.Content:
	// inline, local, versions, peers or relay).
	Content string `json:"content,omitempty"`
	// Unrecorded says the content is back on disk but not yet recorded as
	// a version: this device has heard from no other device or relay
	// since it started, so it may not sign entries yet (docs/sync.md,
	// "This device's own log"). It is recorded and sent once it has.
	Unrecorded bool `json:"unrecorded,omitempty"`
}
