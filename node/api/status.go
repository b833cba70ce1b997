package api

import "time"

// Status is the shape of `weft status --json` and GET /v1/status.
type Status struct {
	Device  string         `json:"device"`
	Name    string         `json:"name,omitempty"` // this device's name in its vaults' membership (the first vault's that has one)
	Addrs   []string       `json:"addrs"`
	Folders []FolderStatus `json:"folders"`
	Peers   []PeerStatus   `json:"peers"`
}

// FolderStatus is one folder's state.
type FolderStatus struct {
	Path            string `json:"path"`
	Vault           string `json:"vault"`
	State           string `json:"state"`           // error, held, scanning, syncing, offline, in-sync
	Error           string `json:"error,omitempty"` // why, when State is "error"
	InitialScanDone bool   `json:"initial_scan_done"`
	Files           int    `json:"files"`
	Bytes           int64  `json:"bytes"`
	Pending         int    `json:"pending"`
	PendingApply    int    `json:"pending_apply"`
	PendingFetch    int    `json:"pending_fetch"`
	// PendingBytes estimates the bytes of files the current reconcile
	// pass still writes (the largest version waiting at each path, less
	// what the pass wrote); 0 between passes.
	PendingBytes  int64         `json:"pending_bytes"`
	PendingUpload int           `json:"pending_upload"`
	Unsafe        uint64        `json:"unsafe"`
	Written       uint64        `json:"written"` // this device's own entries, durable here
	Conflicts     int           `json:"conflicts"`
	Errors        []PathMessage `json:"errors"`
}

// PathMessage is a problem with one path, or with the whole folder when
// Path is empty. Code is stable (docs/api.md, "Error codes"); Reason is
// for a person.
type PathMessage struct {
	Code   string     `json:"code,omitempty"`
	Path   string     `json:"path"`
	Peer   string     `json:"peer,omitempty"` // the device or relay concerned, where one is
	Reason string     `json:"reason"`
	Since  *time.Time `json:"since,omitempty"` // when the problem began, where weft knows
}

// PeerStatus is one peer's state.
type PeerStatus struct {
	ID            string `json:"id"`
	Name          string `json:"name,omitempty"` // as the membership records it
	Role          string `json:"role"`           // device, relay
	Connection    string `json:"connection"`     // lan, direct, holepunched, relayed, offline
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	MsgsSent      int64  `json:"messages_sent"`
	MsgsReceived  int64  `json:"messages_received"`
	// SentBytesPerSec and RecvBytesPerSec are the throughput to and from
	// the peer over the last minute (or since the API started, if less):
	// the same figures as `weft doctor`'s.
	SentBytesPerSec float64    `json:"sent_bytes_per_sec"`
	RecvBytesPerSec float64    `json:"received_bytes_per_sec"`
	InSync          bool       `json:"in_sync"`
	LastSeen        *time.Time `json:"last_seen"` // now while connected; null if never connected
}
