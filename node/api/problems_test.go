package api

import (
	"testing"
	"time"
)

// Each errors[] item and each state change is published once when it
// appears and once when it clears; an item without a since gets the time
// it was first seen, and keeps it.
func TestProblemTracker(t *testing.T) {
	var p ProblemTracker
	var got []Event
	pub := func(e Event) { got = append(got, e) }
	t0 := time.Unix(1_800_000_000, 0).UTC()
	since := t0.Add(-time.Hour)
	folders := func(state string, errs ...PathMessage) []FolderStatus {
		return []FolderStatus{{Path: "/f", State: state, Errors: errs}}
	}

	fs := folders("out-of-sync", PathMessage{Code: CodeCannotSync, Path: "a\u0301.md", Reason: "not NFC"}, PathMessage{Code: CodeHomeDiskFull, Reason: "full", Since: &since})
	p.Track(fs, t0, pub)
	if len(got) != 3 || got[0].Type != EventFolderState || got[0].Kind != "out-of-sync" ||
		got[1].Type != EventProblem || got[1].Kind != CodeCannotSync || got[1].Path != "a\u0301.md" || got[2].Kind != CodeHomeDiskFull {
		t.Fatalf("first: %+v", got)
	}
	if fs[0].Errors[0].Since == nil || !fs[0].Errors[0].Since.Equal(t0) || !fs[0].Errors[1].Since.Equal(since) {
		t.Fatalf("since: %v %v", fs[0].Errors[0].Since, fs[0].Errors[1].Since)
	}

	got = nil
	fs = folders("out-of-sync", PathMessage{Code: CodeCannotSync, Path: "a\u0301.md", Reason: "not NFC"}, PathMessage{Code: CodeHomeDiskFull, Reason: "full", Since: &since})
	p.Track(fs, t0.Add(time.Minute), pub)
	if len(got) != 0 || !fs[0].Errors[0].Since.Equal(t0) {
		t.Fatalf("unchanged: events %+v, since %v (want none, %v)", got, fs[0].Errors[0].Since, t0)
	}

	p.Track(folders("in-sync"), t0.Add(2*time.Minute), pub)
	var cleared int
	for _, e := range got {
		if e.Type == EventProblemCleared {
			cleared++
		}
	}
	if len(got) != 3 || got[0].Type != EventFolderState || got[0].Kind != "in-sync" || cleared != 2 {
		t.Fatalf("cleared: %+v", got)
	}
}
