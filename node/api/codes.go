package api

// The codes of a folder's status errors[] items (PathMessage.Code), which
// scripts and the doctor act on: stable, documented in docs/api.md ("Error
// codes"), never reused for another meaning.

// Codes that stop the folder (docs/folder.md, "The folder marker").
const (
	CodeMarkerMissing = "folder-marker-missing" // the folder's marker is gone: an unmounted drive, a moved folder
	CodeMarkerForeign = "folder-marker-foreign" // the marker names another vault
	CodeUnreadable    = "folder-unreadable"     // the folder cannot be read
)

// Codes of the whole folder.
const (
	CodeHomeDiskFull   = "home-disk-full"  // the disk that holds weft's home is full
	CodeMassDelete     = "mass-delete"     // deletions held for the user
	CodeCorrupt        = "corrupt"         // a file found damaged on disk, being written again
	CodeOwnLogForked   = "own-log-forked"  // a peer holds another history of this device's log
	CodeMembershipLost = "membership-lost" // the membership log is damaged here, being fetched again
	// CodeMembershipForked: two admins changed the membership at the same
	// moment; a peer holds another record at a sequence number held here.
	CodeMembershipForked = "membership-forked"
	CodeLogUnconfirmed   = "log-unconfirmed" // local changes wait until this device knows its own log is whole
	CodeRelayFull        = "relay-full"      // a relay's quota is full while it lacks what this device holds
	CodeRevoked          = "revoked"         // the vault no longer accepts this device
	CodeWatcherLimit     = "watcher-limit"   // some of the folder is not watched: the system's watch limit
	CodeWatcherFailed    = "watcher-failed"  // the watcher is not running at all
)

// Codes of a path whose last apply failed (weft retries it).
const (
	CodeFolderDiskFull   = "folder-disk-full"  // the folder's file system is full
	CodeReadOnly         = "read-only"         // the folder's file system is read-only
	CodePermission       = "permission-denied" // weft may not write there
	CodeChunkUnavailable = "chunk-unavailable" // no connected peer or relay has a chunk
	CodeLocalEdit        = "local-edit"        // the file changed here while it was being replaced
	CodeApplyFailed      = "apply-failed"      // any other failure
)

// Codes of paths the scanner skips.
const (
	CodeCannotSync     = "cannot-sync" // a name other systems cannot hold (not NFC, reserved characters)
	CodeTooLarge       = "too-large"   // over weft's size limit
	CodePathUnreadable = "unreadable"  // weft may not read it
)
