package service

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeRunner records the commands it is given and answers from a table
// keyed by the command line; a command not in the table succeeds with no
// output.
type fakeRunner struct {
	calls   []string
	answers map[string]fakeAnswer
}

type fakeAnswer struct {
	out string
	err error
}

func (f *fakeRunner) run(name string, args ...string) ([]byte, error) {
	line := strings.Join(append([]string{name}, args...), " ")
	f.calls = append(f.calls, line)
	a := f.answers[line]
	return []byte(a.out), a.err
}

func (f *fakeRunner) take() []string {
	c := f.calls
	f.calls = nil
	return c
}

var agentSpec = Spec{
	Name:        "weft",
	Description: "weft agent",
	Exe:         "/usr/bin/weft",
	Args:        []string{"--home", "/home/ann/weft home", "up", "--quiet"},
}

func TestSystemdInstallStatusUninstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "systemd", "user") // created by Install
	f := &fakeRunner{answers: map[string]fakeAnswer{}}
	d := Systemd{Dir: dir, Run: f.run}
	unit := filepath.Join(dir, "weft.service")

	st, err := d.Status("weft")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Status{Name: "weft", Manager: "systemd", Path: unit}, st); diff != "" {
		t.Fatalf("status before install (-want +got):\n%s", diff)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Fatalf("status of a missing unit ran %q", calls)
	}

	in, err := d.Install(agentSpec, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != unit || !in.Started {
		t.Fatalf("got %+v, want path %s, started", in, unit)
	}
	if !strings.Contains(strings.Join(in.Notes, "\n"), "loginctl enable-linger $USER") {
		t.Fatalf("notes %q do not give the linger advice", in.Notes)
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != SystemdUnit(agentSpec) {
		t.Fatalf("unit file holds\n%s\nwant\n%s", b, SystemdUnit(agentSpec))
	}
	if fi, err := os.Stat(unit); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("unit mode %v (%v), want 0644", fi.Mode(), err)
	}
	want := []string{"systemctl --user daemon-reload", "systemctl --user enable --now weft.service"}
	if diff := cmp.Diff(want, f.take()); diff != "" {
		t.Fatalf("install commands (-want +got):\n%s", diff)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("unit directory holds %d entries, want the unit alone (no temporary file left)", len(ents))
	}

	// Installing again replaces the unit and restarts the running service.
	changed := agentSpec
	changed.Args = []string{"--home", "/elsewhere", "up"}
	if _, err := d.Install(changed, true); err != nil {
		t.Fatal(err)
	}
	want = append(want, "systemctl --user restart weft.service")
	if diff := cmp.Diff(want, f.take()); diff != "" {
		t.Fatalf("reinstall commands (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(unit); !strings.Contains(string(b), "--home /elsewhere up\n") {
		t.Fatalf("reinstalled unit holds\n%s", b)
	}

	f.answers["systemctl --user is-active weft.service"] = fakeAnswer{out: "failed\n", err: errors.New("exit status 3")}
	st, err = d.Status("weft")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Status{Name: "weft", Manager: "systemd", Path: unit, Installed: true, State: "failed"}, st); diff != "" {
		t.Fatalf("status (-want +got):\n%s", diff)
	}
	f.answers["systemctl --user is-active weft.service"] = fakeAnswer{out: "Failed to connect to bus: No medium found\n", err: errors.New("exit status 1")}
	st, _ = d.Status("weft")
	if st.State != "unknown" || !strings.Contains(st.Error, "Failed to connect to bus") {
		t.Fatalf("status without a user manager: %+v, want state unknown and the reason", st)
	}
	f.take()

	rm, err := d.Uninstall("weft")
	if err != nil {
		t.Fatal(err)
	}
	if !rm.Removed {
		t.Fatalf("got %+v, want removed", rm)
	}
	want = []string{"systemctl --user disable --now weft.service", "systemctl --user daemon-reload"}
	if diff := cmp.Diff(want, f.take()); diff != "" {
		t.Fatalf("uninstall commands (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unit still there after uninstall: %v", err)
	}
	rm, err = d.Uninstall("weft")
	if err != nil || rm.Removed {
		t.Fatalf("second uninstall: %+v, %v; want nothing removed and no error", rm, err)
	}
	if calls := f.take(); len(calls) != 0 {
		t.Fatalf("uninstall of a missing unit ran %q", calls)
	}
}

func TestSystemdInstallNoStart(t *testing.T) {
	dir := t.TempDir()
	f := &fakeRunner{}
	in, err := Systemd{Dir: dir, Run: f.run}.Install(agentSpec, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.Started || len(f.calls) != 0 {
		t.Fatalf("--no-start: started %v, commands %q; want neither", in.Started, f.calls)
	}
	if !strings.Contains(strings.Join(in.Notes, "\n"), "systemctl --user daemon-reload && systemctl --user enable --now weft.service") {
		t.Fatalf("notes %q do not say how to start it", in.Notes)
	}
	if _, err := os.Stat(filepath.Join(dir, "weft.service")); err != nil {
		t.Fatal(err)
	}
}

func TestSystemdManagerFails(t *testing.T) {
	dir := t.TempDir()
	f := &fakeRunner{answers: map[string]fakeAnswer{
		"systemctl --user daemon-reload": {out: "Failed to connect to bus: No medium found\n", err: errors.New("exit status 1")},
	}}
	in, err := Systemd{Dir: dir, Run: f.run}.Install(agentSpec, true)
	if err == nil {
		t.Fatal("install succeeded although systemctl failed")
	}
	for _, s := range []string{
		"systemctl --user daemon-reload: exit status 1: Failed to connect to bus",
		"the unit is written at " + filepath.Join(dir, "weft.service"),
		"start it by hand with: systemctl --user daemon-reload && systemctl --user enable --now weft.service",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if in.Started {
		t.Error("reported started")
	}
	if diff := cmp.Diff([]string{"systemctl --user daemon-reload"}, f.calls); diff != "" {
		t.Errorf("commands after the failure (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "weft.service")); err != nil {
		t.Errorf("unit not kept after the manager failed: %v", err)
	}
}

func TestLaunchdInstallStatusUninstall(t *testing.T) {
	tmp := t.TempDir()
	dir, logs := filepath.Join(tmp, "LaunchAgents"), filepath.Join(tmp, "Logs", "weft")
	f := &fakeRunner{answers: map[string]fakeAnswer{}}
	d := Launchd{Dir: dir, LogDir: logs, UID: 501, Run: f.run}
	plist := filepath.Join(dir, "org.weftsync.weft.plist")

	in, err := d.Install(agentSpec, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Path != plist || !in.Started {
		t.Fatalf("got %+v, want path %s, started", in, plist)
	}
	b, err := os.ReadFile(plist)
	if err != nil {
		t.Fatal(err)
	}
	if want := LaunchdPlist(agentSpec, filepath.Join(logs, "weft.log")); string(b) != want {
		t.Fatalf("plist holds\n%s\nwant\n%s", b, want)
	}
	if fi, err := os.Stat(logs); err != nil || !fi.IsDir() {
		t.Fatalf("log directory not created: %v", err)
	}
	if diff := cmp.Diff([]string{"launchctl bootstrap gui/501 " + plist}, f.take()); diff != "" {
		t.Fatalf("install commands (-want +got):\n%s", diff)
	}

	if _, err := d.Install(agentSpec, true); err != nil {
		t.Fatal(err)
	}
	want := []string{"launchctl bootout gui/501/org.weftsync.weft", "launchctl bootstrap gui/501 " + plist}
	if diff := cmp.Diff(want, f.take()); diff != "" {
		t.Fatalf("reinstall commands (-want +got):\n%s", diff)
	}

	f.answers["launchctl print gui/501/org.weftsync.weft"] = fakeAnswer{out: "gui/501/org.weftsync.weft = {\n\tactive count = 1\n\tstate = running\n\tprogram = /usr/bin/weft\n}\n"}
	st, err := d.Status("weft")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Status{Name: "weft", Manager: "launchd", Path: plist, Installed: true, State: "running"}, st); diff != "" {
		t.Fatalf("status (-want +got):\n%s", diff)
	}
	f.take()

	rm, err := d.Uninstall("weft")
	if err != nil || !rm.Removed {
		t.Fatalf("uninstall: %+v, %v", rm, err)
	}
	want = []string{"launchctl print gui/501/org.weftsync.weft", "launchctl bootout gui/501/org.weftsync.weft"}
	if diff := cmp.Diff(want, f.take()); diff != "" {
		t.Fatalf("uninstall commands (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(plist); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("plist still there: %v", err)
	}
	st, _ = d.Status("weft")
	if st.Installed {
		t.Fatalf("status after uninstall: %+v", st)
	}
}

func TestLaunchdManagerFails(t *testing.T) {
	tmp := t.TempDir()
	plist := filepath.Join(tmp, "org.weftsync.weft.plist")
	f := &fakeRunner{answers: map[string]fakeAnswer{
		"launchctl bootstrap gui/501 " + plist: {out: "Bootstrap failed: 5: Input/output error\n", err: errors.New("exit status 5")},
	}}
	_, err := Launchd{Dir: tmp, LogDir: tmp, UID: 501, Run: f.run}.Install(agentSpec, true)
	if err == nil || !strings.Contains(err.Error(), "Input/output error") || !strings.Contains(err.Error(), "start it by hand with: launchctl bootstrap gui/501 "+plist) {
		t.Fatalf("error %v, want launchctl's output and the command to run by hand", err)
	}
}
