package folderstate

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// settled is a folder with nothing to do and nothing wrong.
func settled() Facts { return Facts{Scanned: true} }

// Each fault, alone, gives its state; with every fault ranked below it
// present too, it still does: the precedence Judge documents, one rung at
// a time.
func TestJudgePrecedence(t *testing.T) {
	at := time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)
	rungs := []struct {
		name  string
		set   func(*Facts)
		state string
		err   string
	}{
		{"log fault", func(f *Facts) {
			f.LogFault = &api.PathMessage{Code: api.CodeRevoked, Reason: "revoked by an admin"}
		}, Error, "revoked by an admin"},
		{"folder stopped", func(f *Facts) {
			f.Stopped = &Problem{Code: api.CodeMarkerMissing, Message: "the folder is gone", Since: at}
		}, Error, "the folder is gone"},
		{"home full", func(f *Facts) { f.HomeFull = &Problem{Message: "no room in weft's home", Since: at} }, Error, "no room in weft's home"},
		{"scanning", func(f *Facts) { f.Scanning = true }, Scanning, ""},
		{"needs the user", func(f *Facts) {
			f.ApplyErrs = map[string]string{"a.md": "open a.md: permission denied"}
		}, Error, "a.md: open a.md: permission denied"},
		{"held deletions", func(f *Facts) {
			f.Held = []api.PathMessage{{Code: api.CodeMassDelete, Reason: "3 deletions held"}}
		}, Held, ""},
		{"damaged, not written again", func(f *Facts) {
			f.Damaged = []api.PathMessage{{Code: api.CodeCorrupt, Path: "b.md", Reason: "content does not match"}}
		}, Error, "b.md: content does not match"},
		{"pending", func(f *Facts) { f.Pending = 4 }, Syncing, ""},
		{"skipped path", func(f *Facts) { f.Skipped = map[string]string{"CON": "a name Windows cannot hold"} }, OutOfSync, ""},
	}
	for i, r := range rungs {
		t.Run(r.name, func(t *testing.T) {
			alone := settled()
			r.set(&alone)
			if got := Judge(alone); got.State != r.state || got.Error != r.err {
				t.Errorf("alone: state %q error %q, want %q %q", got.State, got.Error, r.state, r.err)
			}
			all := settled()
			for _, below := range rungs[i:] {
				below.set(&all)
			}
			if r.name == "damaged, not written again" {
				all.Pending = 0 // being written again is what "pending" below means
			}
			if got := Judge(all); got.State != r.state || got.Error != r.err {
				t.Errorf("with every fault below it: state %q error %q, want %q %q", got.State, got.Error, r.state, r.err)
			}
		})
	}
	if got := Judge(settled()); got.State != InSync || got.Error != "" || got.Errors == nil || len(got.Errors) != 0 {
		t.Errorf("nothing wrong: %+v, want in-sync with errors []", got)
	}
}

// A damaged file that is being written again (something pending) is
// syncing, not an error: it heals by itself.
func TestDamagedBeingRewrittenSyncs(t *testing.T) {
	f := settled()
	f.Damaged = []api.PathMessage{{Code: api.CodeCorrupt, Path: "b.md", Reason: "content does not match"}}
	f.Pending = 1
	if got := Judge(f); got.State != Syncing {
		t.Errorf("state %q, want syncing", got.State)
	}
}

// The other reasons a settled folder is out of sync: a relay that takes
// nothing more, parts of the folder only rescans see.
func TestOutOfSyncReasons(t *testing.T) {
	for name, set := range map[string]func(*Facts){
		"relay full": func(f *Facts) { f.RelayFull = []api.PathMessage{{Code: api.CodeRelayFull, Reason: "quota"}} },
		"unwatched":  func(f *Facts) { f.Unwatched = []api.PathMessage{{Code: api.CodeWatcherLimit, Reason: "watch limit"}} },
	} {
		f := settled()
		set(&f)
		if got := Judge(f); got.State != OutOfSync {
			t.Errorf("%s: state %q, want out-of-sync", name, got.State)
		}
	}
	f := settled()
	f.Skipped = map[string]string{"a.md": "a.md changed while being read"}
	if got := Judge(f); got.State != InSync || len(got.Errors) != 0 {
		t.Errorf("a file skipped because it changed while read settles by itself: %+v", got)
	}
}

// Local changes waiting for the own log keep a settled folder syncing and
// are listed; a folder already out of sync or in error stays so. No
// member connected makes only an in-sync folder offline.
func TestUnconfirmedAndAlone(t *testing.T) {
	f := settled()
	f.Unconfirmed, f.UnconfirmedReason = 2, "this device's log is being confirmed"
	got := Judge(f)
	if got.State != Syncing || len(got.Errors) != 1 || got.Errors[0].Code != api.CodeLogUnconfirmed {
		t.Errorf("unconfirmed changes: %+v", got)
	}
	f.Alone = true
	if got := Judge(f); got.State != Syncing {
		t.Errorf("unconfirmed changes while alone: state %q, want syncing", got.State)
	}
	f = settled()
	f.Alone = true
	if got := Judge(f); got.State != Offline {
		t.Errorf("alone, in sync: state %q, want offline", got.State)
	}
	f.Skipped = map[string]string{"CON": "reserved name"}
	if got := Judge(f); got.State != OutOfSync {
		t.Errorf("alone, out of sync: state %q, want out-of-sync", got.State)
	}
	f = settled()
	f.Unconfirmed = 1
	f.LogFault = &api.PathMessage{Code: api.CodeOwnLogForked, Reason: "forked"}
	if got := Judge(f); got.State != Error || got.Errors[len(got.Errors)-1].Code != api.CodeOwnLogForked {
		t.Errorf("a log fault wins over unconfirmed changes: %+v", got)
	}
}

// errors[] lists every fault in one documented order, whatever the state.
func TestErrorsOrder(t *testing.T) {
	at := time.Date(2026, 12, 7, 22, 0, 0, 0, time.FixedZone("x", 3600))
	f := Facts{
		Scanned:   true,
		Stopped:   &Problem{Code: api.CodeMarkerMissing, Message: "gone", Since: at},
		HomeFull:  &Problem{Message: "home full"},
		Held:      []api.PathMessage{{Code: api.CodeMassDelete}},
		Damaged:   []api.PathMessage{{Code: api.CodeCorrupt}},
		ApplyErrs: map[string]string{"z.md": "no space left on device", "a.md": "something else"},
		Skipped:   map[string]string{"big.bin": "5 GiB: file too large to sync"},
		RelayFull: []api.PathMessage{{Code: api.CodeRelayFull}},
		Unwatched: []api.PathMessage{{Code: api.CodeWatcherLimit}},
		LogFault:  &api.PathMessage{Code: api.CodeMembershipLost},
	}
	got := Judge(f)
	var codes []string
	for _, m := range got.Errors {
		codes = append(codes, m.Code)
	}
	want := []string{api.CodeMarkerMissing, api.CodeHomeDiskFull, api.CodeMassDelete, api.CodeCorrupt,
		api.CodeApplyFailed, api.CodeFolderDiskFull, api.CodeTooLarge, api.CodeRelayFull, api.CodeWatcherLimit, api.CodeMembershipLost}
	if !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	if s := got.Errors[0].Since; s == nil || !s.Equal(at) || s.Location() != time.UTC {
		t.Errorf("since %v, want %v in UTC", s, at)
	}
	if got.Errors[1].Since != nil {
		t.Errorf("an unknown since is %v, want nil", got.Errors[1].Since)
	}
	if got.Errors[4].Path != "a.md" || got.Errors[5].Path != "z.md" {
		t.Errorf("apply errors not by path: %+v", got.Errors[4:6])
	}
}

// Past MaxSkippedShown skipped paths, one last item counts the rest.
func TestSkippedCapped(t *testing.T) {
	f := settled()
	f.Skipped = map[string]string{}
	for i := range MaxSkippedShown + 7 {
		f.Skipped[fmt.Sprintf("p%03d", i)] = "reserved name"
	}
	got := Judge(f).Errors
	if len(got) != MaxSkippedShown+1 {
		t.Fatalf("%d items, want %d", len(got), MaxSkippedShown+1)
	}
	if last := got[len(got)-1]; last.Path != "" || last.Reason != "and 7 more paths that cannot sync (`weft doctor` lists them)" {
		t.Errorf("last item %+v", last)
	}
	if got[0].Path != "p000" || got[MaxSkippedShown-1].Path != fmt.Sprintf("p%03d", MaxSkippedShown-1) {
		t.Errorf("not the first paths by name: %s ... %s", got[0].Path, got[MaxSkippedShown-1].Path)
	}
}
