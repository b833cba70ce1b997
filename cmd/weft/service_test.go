package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestServiceInstallNoStart runs `weft service install --no-start` and
// `weft relay service install --no-start` with XDG_CONFIG_HOME in a
// temporary directory and checks the units: the home made absolute
// (given relative, with a space and a % that systemd must not read as a
// specifier), the binary, and the command. No service manager is run;
// the installer's commands are tested in internal/service.
func TestServiceInstallNoStart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("writes a systemd user unit; on macOS and Windows install would use the real LaunchAgents or service manager")
	}
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	work := t.TempDir()
	t.Chdir(work)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	units := filepath.Join(cfg, "systemd", "user")

	out, err := runRoot(t, "--home", "my home 100%", "service", "install", "--no-start")
	if err != nil {
		t.Fatalf("service install: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(units, "weft.service"))
	if err != nil {
		t.Fatalf("no unit written: %v\n%s", err, out)
	}
	unit := string(b)
	abs := filepath.Join(work, "my home 100%")
	want := "ExecStart=" + exe + ` --home "` + strings.ReplaceAll(abs, "%", "%%") + `" up --quiet` + "\n"
	if !strings.Contains(unit, want) {
		t.Fatalf("unit does not run %q:\n%s", want, unit)
	}
	for _, s := range []string{"Restart=on-failure\n", "StandardOutput=journal\n", "WantedBy=default.target\n"} {
		if !strings.Contains(unit, s) {
			t.Errorf("unit lacks %q:\n%s", s, unit)
		}
	}
	for _, s := range []string{"wrote " + filepath.Join(units, "weft.service"), "systemctl --user enable --now weft.service", "loginctl enable-linger $USER"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "\nstarted ") {
		t.Errorf("--no-start says it started:\n%s", out)
	}

	// The relay: its own home, and flags after -- passed through.
	relayHome := filepath.Join(t.TempDir(), "relay")
	t.Setenv("WEFT_RELAY_HOME", relayHome)
	out, err = runRoot(t, "relay", "service", "install", "--no-start", "--", "--metrics", "127.0.0.1:9100")
	if err != nil {
		t.Fatalf("relay service install: %v\n%s", err, out)
	}
	b, err = os.ReadFile(filepath.Join(units, "weft-relay.service"))
	if err != nil {
		t.Fatalf("no relay unit written: %v\n%s", err, out)
	}
	if want := "ExecStart=" + exe + " relay --home " + relayHome + " --metrics 127.0.0.1:9100\n"; !strings.Contains(string(b), want) {
		t.Fatalf("relay unit does not run %q:\n%s", want, b)
	}

	// Flags the relay would refuse at start are refused now, and nothing
	// is written.
	if err := os.Remove(filepath.Join(units, "weft-relay.service")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"relay", "service", "install", "--no-start", "--", "--no-such-flag"},
		{"relay", "service", "install", "--no-start", "--", "--metrics"},
		{"relay", "service", "install", "--no-start", "stray"},
	} {
		out, err := runRoot(t, args...)
		var u exitUsage
		if !errors.As(err, &u) {
			t.Errorf("%q: got %v, want a usage error\n%s", args, err, out)
		}
		if _, err := os.Stat(filepath.Join(units, "weft-relay.service")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%q wrote a unit", args)
		}
	}
}
