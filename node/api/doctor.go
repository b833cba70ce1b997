package api

import "time"

// Severities of a Finding.
const (
	SeverityProblem = "problem" // something does not sync until it is acted on
	SeverityWarning = "warning" // a risk, or a delay that may resolve itself
	SeverityInfo    = "info"    // what is happening; nothing to do
)

// Diagnosis is the answer of `weft doctor` and GET /v1/doctor: the facts
// it looked at and its findings, most severe first.
type Diagnosis struct {
	Time time.Time `json:"time"`
	// Folder and Path name what was asked about ("" for everything).
	Folder   string            `json:"folder,omitempty"`
	Path     string            `json:"path,omitempty"`
	Healthy  bool              `json:"healthy"` // no finding of severity "problem"
	Folders  []FolderDiagnosis `json:"folders"`
	Peers    []PeerDiagnosis   `json:"peers"`
	Findings []Finding         `json:"findings"`
	// ClockCorrectionMillis is how far this device moves its own clock to
	// date the entries it writes: the median of its members' measured
	// offsets (node/clock.go; docs/sync.md, "Clocks").
	ClockCorrectionMillis int64 `json:"clock_correction_ms"`
}

// FolderDiagnosis is one folder's health.
type FolderDiagnosis struct {
	Path           string        `json:"path"`
	State          string        `json:"state"`
	PendingApply   int           `json:"pending_apply"`
	PendingFetch   int           `json:"pending_fetch"`
	PendingUpload  int           `json:"pending_upload"`
	Unsafe         uint64        `json:"unsafe"`
	Watcher        WatcherHealth `json:"watcher"`
	DiskFreeBytes  int64         `json:"disk_free_bytes"`  // 0 when unknown
	DiskTotalBytes int64         `json:"disk_total_bytes"` // 0 when unknown
}

// WatcherHealth is the state of a folder's file watcher.
type WatcherHealth struct {
	Enabled bool `json:"enabled"`
	// MaxUserWatches is /proc/sys/fs/inotify/max_user_watches (0 when
	// unknown or not Linux); each directory takes one watch.
	MaxUserWatches  int    `json:"max_user_watches"`
	Directories     int    `json:"directories"`
	OverflowRescans int    `json:"overflow_rescans"`
	Failed          string `json:"failed,omitempty"`
}

// PeerDiagnosis is how one member is reached.
type PeerDiagnosis struct {
	ID         string     `json:"id"`
	Name       string     `json:"name,omitempty"` // as the membership records it
	Connection string     `json:"connection"`     // as in the status
	Reachable  bool       `json:"reachable"`
	Addrs      []string   `json:"addrs"` // where this device remembers it listens
	LastSeen   *time.Time `json:"last_seen"`
	InSync     bool       `json:"in_sync"`
	// RTTMillis is a ping's round trip now (or the peerstore's moving
	// average if the ping failed); null when not connected.
	RTTMillis *float64 `json:"rtt_ms"`
	// Throughput of application payload over ThroughputSeconds (up to the
	// last minute).
	SentBytesPerSec   float64 `json:"sent_bytes_per_sec"`
	RecvBytesPerSec   float64 `json:"received_bytes_per_sec"`
	ThroughputSeconds float64 `json:"throughput_seconds"`
	// ClockSkewMillis is how far the peer's clock is ahead of this
	// device's (negative: behind), measured NTP fashion over
	// /weft/clock/1 (node/clock.go) while doctor runs, or else the last
	// measurement; null when the peer was never measured.
	ClockSkewMillis *int64 `json:"clock_skew_ms"`
	// ClockErrorMillis bounds the error of ClockSkewMillis: half the
	// round trip of the probe it comes from.
	ClockErrorMillis *float64 `json:"clock_error_ms,omitempty"`
}

// Finding is one answer to "why is this not in sync?".
type Finding struct {
	Severity string `json:"severity"`
	// Kind is one of: in-sync, peer-offline, peer-reachable, chunk-unavailable,
	// local-edit, conflict, resolving, ignored, unreadable, permission,
	// disk-full, read-only, cannot-sync, too-large, apply-error, applying, unsafe,
	// uploading, watcher-limit, watcher-overflow, watcher-failed,
	// clock-skew, scanning, relay-offline, relay-refused, relay-full,
	// relay-rollback, and the folder error codes of docs/api.md
	// (folder-marker-missing, folder-marker-foreign, folder-unreadable,
	// mass-delete, corrupt, membership-lost, log-unconfirmed).
	Kind    string `json:"kind"`
	Folder  string `json:"folder,omitempty"`
	Path    string `json:"path,omitempty"`
	Peer    string `json:"peer,omitempty"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}
