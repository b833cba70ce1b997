package ui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// activityShown is how many of the latest events the activity page lists.
const activityShown = 200

// chatty are the event types the activity page leaves out unless asked
// for all: the log's and the reconciler's bookkeeping, which a first sync
// publishes by the thousand and which say nothing a person acts on.
var chatty = map[api.EventType]bool{
	api.EventEntryWritten: true, api.EventEntrySafe: true, api.EventEntryReceived: true,
	api.EventPeerStatus: true, api.EventReconciled: true, api.EventTransferStarted: true,
}

// activity is one line of the activity page.
type activity struct {
	Event  api.Event
	What   string // the event in words
	Folder string // the folder's base name
	Peer   string // the peer's name, else a short ID
	Detail string
}

// latestActivity reads the latest events the agent keeps, newest first:
// up to activityShown of them, the chatty ones left out unless all.
// names maps peer IDs to the names the membership gives them, for
// events that carry only the ID.
func latestActivity(c *api.Cursor, all bool, names map[string]string) []activity {
	c.Rewind(api.RetainEvents)
	var out []activity
	for ev, ok := c.TryNext(); ok; ev, ok = c.TryNext() {
		if !all && chatty[ev.Type] {
			continue
		}
		if ev.Name == "" && ev.Peer != "" {
			ev.Name = names[ev.Peer]
		}
		out = append(out, describe(ev))
	}
	slices.Reverse(out)
	if len(out) > activityShown {
		out = out[:activityShown]
	}
	return out
}

// what says each event type in words.
var what = map[api.EventType]string{
	api.EventScanned:          "scanned",
	api.EventLocalChange:      "changed here",
	api.EventApplied:          "received",
	api.EventConflict:         "conflict: both versions kept",
	api.EventError:            "error",
	api.EventPeerConnected:    "device connected",
	api.EventPeerDisconnected: "device disconnected",
	api.EventPeerJoined:       "device joined",
	api.EventJoinPending:      "join waiting for approval",
	api.EventTransferFinished: "fetched",
	api.EventFolderStopped:    "folder stopped",
	api.EventFolderResumed:    "folder resumed",
	api.EventDeletionsHeld:    "deletions held for a decision",
	api.EventDeletionsDecided: "held deletions decided",
	api.EventCorrupt:          "damaged file found",
	api.EventScrubbed:         "stored data checked",
	api.EventProblem:          "problem",
	api.EventProblemCleared:   "problem cleared",
	api.EventFolderState:      "folder state",
	api.EventMissed:           "older events not kept",
	api.EventWatcherRescan:    "rescanned (the watcher overflowed)",
}

// localChange says a local change of each kind (folder.ChangeType) in
// words.
var localChange = map[string]string{
	"added": "added here", "modified": "changed here", "deleted": "deleted here", "kind-changed": "replaced here",
}

// describe puts an event in words for the activity page.
func describe(ev api.Event) activity {
	a := activity{Event: ev, What: what[ev.Type], Peer: ev.Name}
	if a.What == "" {
		a.What = strings.ReplaceAll(string(ev.Type), "-", " ")
	}
	switch {
	case ev.Type == api.EventApplied && ev.Kind == "deletion":
		a.What = "deleted (by another device)"
	case ev.Type == api.EventLocalChange && localChange[ev.Kind] != "":
		a.What = localChange[ev.Kind]
	}
	if ev.Folder != "" {
		a.Folder = filepath.Base(ev.Folder)
	}
	if a.Peer == "" && ev.Peer != "" {
		a.Peer = shortID(ev.Peer)
	}
	var d []string
	switch ev.Type {
	case api.EventScanned, api.EventTransferFinished:
		d = append(d, plural(ev.Count, "change", "changes"))
		if ev.Type == api.EventTransferFinished {
			d[0] = plural(ev.Count, "chunk", "chunks")
		}
	case api.EventFolderState:
		d = append(d, ev.Kind)
	case api.EventMissed:
		if ev.Count > 0 {
			d = append(d, plural(ev.Count, "event", "events"))
		}
	case api.EventApplied, api.EventLocalChange: // the kind is in What
	default:
		if ev.Kind != "" {
			d = append(d, ev.Kind)
		}
	}
	if ev.Bytes > 0 {
		d = append(d, doctor.HumanSize(ev.Bytes))
	}
	if ev.Words != "" {
		d = append(d, "words: "+ev.Words)
	}
	if ev.Error != "" {
		d = append(d, ev.Error)
	}
	a.Detail = strings.Join(d, ", ")
	return a
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// shortID shortens a peer ID for a person: the 8 characters after the
// common "12D3KooW" prefix, as conflict copies name devices.
func shortID(id string) string {
	s := strings.TrimPrefix(id, "12D3KooW")
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
