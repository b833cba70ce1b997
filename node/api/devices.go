package api

import "time"

// InviteResponse is the answer of POST /v1/invite.
type InviteResponse struct {
	Code    string    `json:"code"`
	Expires time.Time `json:"expires"`
}

// WaitingJoin is a join waiting for approval (GET /v1/joins): a device
// that used a code made with `weft invite --confirm`.
type WaitingJoin struct {
	Folder string    `json:"folder"`
	Device string    `json:"device"`         // the joining device's peer ID
	Name   string    `json:"name,omitempty"` // the name it asks for
	Words  string    `json:"words"`          // what the joining device shows too: compare before approving
	Since  time.Time `json:"since"`
}

// JoinDecision is the body of POST /v1/joins/approve and /v1/joins/deny.
type JoinDecision struct {
	// Device is the joining device's peer ID, or a prefix of it naming
	// one waiting join.
	Device string `json:"device"`
}

// RoleRequest is the body of POST /v1/admins.
type RoleRequest struct {
	// Vault is the vault's hex ID (or a prefix); empty means the only one.
	Vault string `json:"vault,omitempty"`
	// Device names a member as RevokeRequest does.
	Device string `json:"device"`
	// Admin: true makes it an admin, false a member.
	Admin bool `json:"admin"`
}

// RenameRequest is the body of POST /v1/devices/rename.
type RenameRequest struct {
	Vault string `json:"vault,omitempty"`
	// Device names a member as RevokeRequest does; empty is this device.
	Device string `json:"device,omitempty"`
	Name   string `json:"name"`
}

// VaultSettings is a vault's settings (GET and POST /v1/settings).
type VaultSettings struct {
	Folder string `json:"folder"`
	Vault  string `json:"vault"`
	// Recoverable: the recovery phrase can admit a device (fixed when the
	// vault was made).
	Recoverable bool `json:"recoverable"`
	// MembersInvite: every member may invite devices as members.
	MembersInvite bool `json:"members_invite"`
}

// SettingsRequest is the body of POST /v1/settings: a setting left out
// keeps its value.
type SettingsRequest struct {
	Vault         string `json:"vault,omitempty"`
	MembersInvite *bool  `json:"members_invite,omitempty"`
}

// Device is one member of a vault.
type Device struct {
	Folder string `json:"folder"`
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"` // as the membership records it
	Role   string `json:"role"`
	Self   bool   `json:"self"`
}

// Conflict is one conflict copy in a folder, and the story its name and
// the folder tell: what it is a copy of, whose content it holds, and what
// holds that path now.
type Conflict struct {
	Folder string `json:"folder"`
	Path   string `json:"path"` // the copy
	// Of is the path the copy was made beside ("" when the copy's name was
	// shortened to fit and cannot say).
	Of string `json:"of,omitempty"`
	// Copy is the content the copy holds: the version that lost, by the
	// device that wrote it.
	Copy ConflictSide `json:"copy"`
	// Winner is what holds Of now, absent when nothing does (deleted
	// since, or Of unknown): the device whose content it is and when that
	// content was modified (its origin, protocol.Graph.Origin), and in
	// RecordedBy the device that resolved the conflict when that is
	// another.
	Winner *ConflictSide `json:"winner,omitempty"`
}

// ResolveRequest is the body of POST /v1/resolve (`weft resolve`;
// docs/conflicts.md).
type ResolveRequest struct {
	// Path is an absolute path inside a synced folder: a conflict copy, or
	// the file it is a copy of when that file has exactly one.
	Path string `json:"path"`
	// Keep is "winner" (what holds the name stays; the copy goes), "copy"
	// (the copy's content takes the name; the copy goes) or "both" (the
	// copy becomes an ordinary file beside the name). Exclusive with Take.
	Keep string `json:"keep,omitempty"`
	// Take is an absolute path of a file whose content becomes the result
	// at the name; the copy goes. The agent reads it.
	Take string `json:"take,omitempty"`
}

// ResolveResult is the answer of POST /v1/resolve and `weft resolve
// --json`.
type ResolveResult struct {
	Folder string `json:"folder"`
	// Copy is the conflict copy resolved, Of the path it is a copy of.
	Copy string `json:"copy"`
	Of   string `json:"of"`
	// Kept is "winner", "copy", "both" or "file" (a file was taken).
	Kept string `json:"kept"`
	// Renamed is where the copy went, for "both".
	Renamed string `json:"renamed,omitempty"`
	// Held means this device may not record changes yet (after a start,
	// until its own log is confirmed; docs/sync.md): the folder is
	// changed, and the resolution is recorded once it may.
	Held bool `json:"held,omitempty"`
}

// ConflictSide is one side of a conflict: a device, when the content was
// last modified, and its size.
type ConflictSide struct {
	Device string    `json:"device,omitempty"` // device ID, when known
	Name   string    `json:"name,omitempty"`   // the device's name, when it has one
	Short  string    `json:"short"`            // the device's short ID, as conflict copy names carry it
	MTime  time.Time `json:"mtime"`
	Size   int64     `json:"size"`
	// RecordedBy is the device that recorded this version when it is not
	// the one whose content it holds (a resolution kept another device's
	// content); RecordedByName its name, where it has one.
	RecordedBy     string `json:"recorded_by,omitempty"`
	RecordedByName string `json:"recorded_by_name,omitempty"`
}

// VaultsLoaded is the answer of POST /v1/vaults/load: the folders of
// vaults the agent started syncing (added to the home since it started).
type VaultsLoaded struct {
	Added []string `json:"added"`
}

// RevokeRequest is the body of POST /v1/revoke.
type RevokeRequest struct {
	// Vault is the vault's hex ID (or a prefix); empty means the only one.
	Vault string `json:"vault,omitempty"`
	// Device is the device's peer ID, or a prefix of it unique among the
	// vault's members (with or without the common "12D3KooW").
	Device string `json:"device"`
}

// RevokeResult is the answer of POST /v1/revoke.
type RevokeResult struct {
	Folder string `json:"folder"`
	Vault  string `json:"vault"`
	Device string `json:"device"`
	// Epoch is the key epoch the revocation starts.
	Epoch uint32 `json:"epoch"`
	// Upto is the revoked device's last entry that stays valid.
	Upto uint64 `json:"upto"`
}

// RelayInfo is one relay of a folder's vault, as GET /v1/relays reports it.
type RelayInfo struct {
	Folder    string `json:"folder"`
	Vault     string `json:"vault"`
	Addr      string `json:"addr"`
	ID        string `json:"id"`
	Connected bool   `json:"connected"`
	// Holds is how many of this device's own entries the relay holds in
	// full (entries and chunks).
	Holds uint64 `json:"holds"`
	// Quota is what the relay last reported; nil before it answered.
	Quota *RelayQuota `json:"quota"`
	// Error is why the relay refused to serve the vault, if it did.
	Error string `json:"error,omitempty"`
}

// RelayQuota is a relay's account of a vault against its quota; a limit of
// 0 means none.
type RelayQuota struct {
	Bytes        uint64    `json:"bytes"`
	BytesLimit   uint64    `json:"bytes_limit"`
	Entries      uint64    `json:"entries"`
	EntriesLimit uint64    `json:"entries_limit"`
	Full         bool      `json:"full"`
	At           time.Time `json:"at"`
}

// RelayRollback records a relay reporting an older state of a vault than
// it had reported before.
type RelayRollback struct {
	Folder string `json:"folder"`
	Relay  string `json:"relay"` // the relay's peer ID
	// Author is the first device (by ID) whose log the relay went back on,
	// from Had to Now entries; Authors counts every such device.
	Author  string    `json:"author"`
	Had     uint64    `json:"had"`
	Now     uint64    `json:"now"`
	Authors int       `json:"authors"`
	At      time.Time `json:"at"`
	Message string    `json:"message"`
}
