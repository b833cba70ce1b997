package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// statusDoc mirrors the status document of docs/api.md field for field;
// decoding with DisallowUnknownFields fails on any field the document does
// not list, and the checks below fail on any value it does not allow.
type statusDoc struct {
	Device  string   `json:"device"`
	Name    string   `json:"name"`
	Addrs   []string `json:"addrs"`
	Folders []struct {
		Path            string `json:"path"`
		Vault           string `json:"vault"`
		State           string `json:"state"`
		Error           string `json:"error"`
		InitialScanDone bool   `json:"initial_scan_done"`
		Files           int    `json:"files"`
		Bytes           int64  `json:"bytes"`
		Pending         int    `json:"pending"`
		PendingApply    int    `json:"pending_apply"`
		PendingFetch    int    `json:"pending_fetch"`
		PendingBytes    int64  `json:"pending_bytes"`
		PendingUpload   int    `json:"pending_upload"`
		Unsafe          uint64 `json:"unsafe"`
		Written         uint64 `json:"written"`
		Conflicts       int    `json:"conflicts"`
		Errors          []struct {
			Code   string     `json:"code"`
			Path   string     `json:"path"`
			Peer   string     `json:"peer"`
			Reason string     `json:"reason"`
			Since  *time.Time `json:"since"`
		} `json:"errors"`
	} `json:"folders"`
	Peers []struct {
		ID            string     `json:"id"`
		Name          string     `json:"name"`
		Role          string     `json:"role"`
		Connection    string     `json:"connection"`
		BytesSent     int64      `json:"bytes_sent"`
		BytesReceived int64      `json:"bytes_received"`
		MsgsSent      int64      `json:"messages_sent"`
		MsgsReceived  int64      `json:"messages_received"`
		SentPerSec    float64    `json:"sent_bytes_per_sec"`
		RecvPerSec    float64    `json:"received_bytes_per_sec"`
		InSync        bool       `json:"in_sync"`
		LastSeen      *time.Time `json:"last_seen"`
	} `json:"peers"`
}

// strictStatus runs `weft status --json` and checks it against the
// documented contract.
func strictStatus(t *testing.T, d *device) statusDoc {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(d.must("status", "--json")))
	dec.DisallowUnknownFields()
	var st statusDoc
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status --json does not match docs/api.md: %v", err)
	}
	if st.Device == "" || st.Addrs == nil || st.Folders == nil || st.Peers == nil {
		t.Fatalf("status: got %+v, want device, addrs, folders and peers present", st)
	}
	for _, f := range st.Folders {
		if !slices.Contains([]string{"scanning", "syncing", "in-sync", "out-of-sync", "offline", "held", "error"}, f.State) {
			t.Errorf("folder state %q is not a documented value", f.State)
		}
		if (f.State == "error") != (f.Error != "") {
			t.Errorf("folder state %q with error %q: want a reason exactly when the state is error", f.State, f.Error)
		}
		if f.Pending != f.PendingApply+f.PendingFetch {
			t.Errorf("pending %d, want pending_apply + pending_fetch = %d", f.Pending, f.PendingApply+f.PendingFetch)
		}
		if f.Errors == nil {
			t.Errorf("errors is null, want a list")
		}
		for _, e := range f.Errors {
			if e.Code == "" || e.Since == nil {
				t.Errorf("errors[] item %+v: every item has a code and a since", e)
			}
		}
		if f.State == "in-sync" && len(f.Errors) > 0 {
			t.Errorf("in-sync with errors %+v", f.Errors)
		}
		if f.Unsafe > f.Written {
			t.Errorf("unsafe %d > written %d: unsafe counts this device's own entries", f.Unsafe, f.Written)
		}
		if f.PendingBytes < 0 {
			t.Errorf("pending_bytes %d", f.PendingBytes)
		}
	}
	for _, p := range st.Peers {
		if !slices.Contains([]string{"device", "relay"}, p.Role) {
			t.Errorf("peer role %q is not a documented value", p.Role)
		}
		if !slices.Contains([]string{"lan", "direct", "holepunched", "relayed", "offline"}, p.Connection) {
			t.Errorf("peer connection %q is not a documented value", p.Connection)
		}
		if p.Connection != "offline" && p.LastSeen == nil {
			t.Errorf("connected peer %s has no last_seen", p.ID)
		}
		if p.SentPerSec < 0 || p.RecvPerSec < 0 {
			t.Errorf("peer %s throughput %v / %v", p.ID, p.SentPerSec, p.RecvPerSec)
		}
	}
	return st
}

// exitCode runs weft and returns its exit code and output.
func (d *device) exitCode(args ...string) (int, string, string) {
	cmd := d.command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	d.t.Fatal(err)
	return -1, "", ""
}

func TestCLIExitCodesAndScan(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	for _, tt := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"status"}, 1, "weft up"},                 // agent not running
		{[]string{"doctor"}, 1, "weft up"},                 // agent not running
		{[]string{"events"}, 1, "weft up"},                 // agent not running
		{[]string{"status", "--bogus"}, 2, "unknown flag"}, // bad flag
		{[]string{"scan", "x", "y"}, 2, "usage"},           // too many arguments
		{[]string{"up", "--listen", "not-a-multiaddr"}, 1, ""},
	} {
		if code, _, stderr := a.exitCode(tt.args...); code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("weft %s: got exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.want)
		}
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(a.must("version", "--json")), &v); err != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go") {
		t.Fatalf("version --json: got %+v, %v", v, err)
	}

	// The watcher waits 10 minutes: only `weft scan` can record changes.
	a.upArgs = []string{"--mdns=false", "--settle", "10m"}
	a.up()
	waitStatus(t, a, 30*time.Second, func(st api.Status) error {
		if !st.Folders[0].InitialScanDone || st.Folders[0].State == "scanning" {
			return fmt.Errorf("first scan not done")
		}
		return nil
	})
	a.write("notes/one.md", []byte("one"))
	var res []api.ScanResult
	if err := json.Unmarshal([]byte(a.must("scan", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Changes != 2 || len(res[0].Changed) != 2 || res[0].Changed[1].Path != "notes/one.md" {
		t.Fatalf("scan: got %+v, want notes and notes/one.md added", res)
	}
	// Durable and visible as soon as scan returns.
	if st := strictStatus(t, a); st.Folders[0].Files != 1 || st.Folders[0].Unsafe != 1 {
		t.Fatalf("after scan: got %+v, want 1 file recorded in 1 entry no one else holds", st.Folders[0])
	}
	a.write("notes/two.md", []byte("two"))
	a.write("other.md", []byte("other"))
	out := a.must("scan", filepath.Join(a.folder, "notes"))
	if !strings.Contains(out, "notes/two.md") || strings.Contains(out, "other.md") {
		t.Fatalf("scan PATH: got %q, want notes/two.md only", out)
	}
	if code, _, stderr := a.exitCode("scan", t.TempDir()); code != 1 || !strings.Contains(stderr, "not inside any synced folder") {
		t.Fatalf("scan of an unknown folder: got exit %d, %q", code, stderr)
	}
	if code, out, _ := a.exitCode("doctor"); code != 0 || !strings.Contains(out, "in sync") {
		t.Fatalf("doctor of a healthy folder: got exit %d, %q", code, out)
	}
	a.write(".weftignore", []byte("*.tmp\n"))
	a.write("scratch.tmp", []byte("x"))
	a.must("scan")
	code, out, _ := a.exitCode("doctor", filepath.Join(a.folder, "scratch.tmp"))
	if code != exitProblems || !strings.Contains(out, ".weftignore") {
		t.Fatalf("doctor of an ignored path: got exit %d, %q; want %d naming .weftignore", code, out, exitProblems)
	}
}

// follower runs `weft events --json` and collects what it prints.
type follower struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	evs []api.Event
}

func (d *device) follow(t *testing.T, extra ...string) *follower {
	t.Helper()
	f := &follower{cmd: d.command(append([]string{"events", "--json"}, extra...)...)}
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev api.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				f.mu.Lock()
				f.evs = append(f.evs, ev)
				f.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { _ = f.cmd.Process.Kill(); _ = f.cmd.Wait() })
	// Subscribed once a scan asked for through the API shows up.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		d.must("scan")
		time.Sleep(100 * time.Millisecond)
		f.mu.Lock()
		n := len(f.evs)
		f.mu.Unlock()
		if n > 0 {
			return f
		}
	}
	t.Fatalf("%s: weft events shows nothing", d.name)
	return nil
}

// waitOrder waits until the events include want in this order, each
// matching on type and, when given after a colon, path.
func (f *follower) waitOrder(t *testing.T, limit time.Duration, want ...string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var got []string
	for time.Now().Before(deadline) {
		f.mu.Lock()
		got = got[:0]
		i := 0
		for _, ev := range f.evs {
			got = append(got, string(ev.Type)+":"+ev.Path)
			typ, path, _ := strings.Cut(want[i], ":")
			if i < len(want) && string(ev.Type) == typ && (path == "" || ev.Path == path) {
				i++
				if i == len(want) {
					f.mu.Unlock()
					return
				}
			}
		}
		f.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("events: got %v, want %v in this order", got, want)
}

// TestEventsResumeAcrossRestart: `weft events --reconnect` follows
// through a restart of the agent, saying that it missed events rather than
// skipping them silently; `--since ID` starts right after that event.
func TestEventsResumeAcrossRestart(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	a.up()
	f := a.follow(t, "--reconnect", "--type", "scanned")
	a.stop()
	a.up()
	a.must("scan")
	f.waitOrder(t, time.Minute, "scanned", "events-missed", "scanned")

	f.mu.Lock()
	last := f.evs[len(f.evs)-1]
	f.mu.Unlock()
	if last.ID == 0 || last.Type != "scanned" {
		t.Fatalf("last event %+v, want a scanned event with an ID", last)
	}
	g := a.follow(t, "--since", fmt.Sprint(last.ID-1), "--type", "scanned")
	g.mu.Lock()
	first := g.evs[0]
	g.mu.Unlock()
	if first.ID != last.ID {
		t.Errorf("--since %d began at %+v, want the event %d", last.ID-1, first, last.ID)
	}
}

// TestEventsAndDoctor follows a small sync with `weft events`, then stages
// a conflict, a chunk that no reachable device holds and a stopped peer,
// and checks that `weft doctor` names each.
func TestEventsAndDoctor(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.upArgs = []string{"--mdns=false", "--settle", "10m"} // a records only on `weft scan`
	a.must("init", a.folder)
	a.up()
	a.must("folder", "versions", a.folder, "--off") // its version store would serve the recorded chunks
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.must("join", lines[len(lines)-1], b.folder)
	evA := a.follow(t)
	b.up()
	evB := b.follow(t)
	a.write("small.md", []byte("small"))
	a.must("scan")
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["small.md"] != "file:small" {
			return fmt.Errorf("small.md not synced")
		}
		return nil
	})
	evA.waitOrder(t, 30*time.Second, "entry-written", "entry-safe")
	evB.waitOrder(t, 30*time.Second, "entry-received", "file-applied:small.md")
	if st := strictStatus(t, b); len(st.Peers) != 1 || st.Peers[0].Connection != "lan" {
		t.Fatalf("b's peers: got %+v, want a on the lan", st.Peers)
	}

	// While b is down: a records big.bin, then changes it on disk without
	// recording that (so it can no longer serve the recorded chunks), and
	// both write different bytes at note.bin (a conflict).
	b.stop()
	r := rand.New(rand.NewPCG(9, 10))
	big := randBytes(r, 256<<10)
	a.write("big.bin", big)
	a.must("scan", filepath.Join(a.folder, "big.bin"))
	time.Sleep(20 * time.Millisecond)
	a.write("big.bin", randBytes(r, 256<<10))
	a.write("note.bin", []byte("a\x00a"))
	a.must("scan", filepath.Join(a.folder, "note.bin"))
	b.write("note.bin", []byte("b\x00b"))
	b.up()
	waitStatus(t, b, time.Minute, func(st api.Status) error {
		f := st.Folders[0]
		if f.Conflicts != 1 || len(f.Errors) == 0 {
			return fmt.Errorf("conflicts %d, errors %v; want the conflict copy and big.bin failing", f.Conflicts, f.Errors)
		}
		return nil
	})
	doctor := func(d *device, args ...string) (int, api.Diagnosis) {
		t.Helper()
		code, out, stderr := d.exitCode(append([]string{"doctor", "--json"}, args...)...)
		var diag api.Diagnosis
		if err := json.Unmarshal([]byte(out), &diag); err != nil {
			t.Fatalf("doctor %v: exit %d, %v: %s", args, code, err, stderr)
		}
		return code, diag
	}
	has := func(diag api.Diagnosis, sev, kind, path string) bool {
		for _, f := range diag.Findings {
			if f.Severity == sev && f.Kind == kind && (path == "" || f.Path == path) && f.Fix != "" {
				return true
			}
		}
		return false
	}
	if code, diag := doctor(b, filepath.Join(b.folder, "note.bin")); code != exitProblems || !has(diag, "problem", "conflict", "note.bin") {
		t.Fatalf("doctor note.bin: exit %d, findings %+v; want a conflict", code, diag.Findings)
	}
	if code, diag := doctor(b, filepath.Join(b.folder, "big.bin")); code != 0 || !has(diag, "warning", "chunk-unavailable", "big.bin") {
		t.Fatalf("doctor big.bin with a connected: exit %d, findings %+v; want a warning that a lacks the chunks", code, diag.Findings)
	}
	a.stop()
	waitStatus(t, b, 30*time.Second, func(st api.Status) error {
		if st.Peers[0].Connection != "offline" {
			return fmt.Errorf("a is %s", st.Peers[0].Connection)
		}
		return nil
	})
	code, diag := doctor(b)
	if code != exitProblems || !has(diag, "problem", "chunk-unavailable", "big.bin") || !has(diag, "problem", "peer-offline", "") || !has(diag, "problem", "conflict", "") {
		t.Fatalf("doctor with a stopped: exit %d, findings %+v; want big.bin's chunks unavailable, a offline, the conflict", code, diag.Findings)
	}
	strictStatus(t, b)
}
