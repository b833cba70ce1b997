package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Systemd installs systemd user units. It is safe for concurrent use only
// on different names.
type Systemd struct {
	// Dir is the user unit directory: $XDG_CONFIG_HOME/systemd/user, else
	// ~/.config/systemd/user (SystemdUserDir).
	Dir string
	// Run runs systemctl; nil is ExecRunner.
	Run Runner
}

// SystemdUserDir is where systemd looks for a user's own units.
func SystemdUserDir() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "systemd", "user"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the systemd user unit directory: %w", err)
	}
	return filepath.Join(h, ".config", "systemd", "user"), nil
}

func (d Systemd) run() Runner {
	if d.Run == nil {
		return ExecRunner
	}
	return d.Run
}

func (d Systemd) path(name string) string { return filepath.Join(d.Dir, name+".service") }

// systemctl runs `systemctl --user args...` and wraps a failure with the
// command and its output.
func (d Systemd) systemctl(args ...string) ([]byte, error) {
	full := append([]string{"--user"}, args...)
	out, err := d.run()("systemctl", full...)
	if err != nil {
		return out, fmt.Errorf("systemctl %s: %w%s", strings.Join(full, " "), err, outputSuffix(out))
	}
	return out, nil
}

// outputSuffix is a command's output for an error message, or "".
func outputSuffix(out []byte) string {
	if s := strings.TrimSpace(string(out)); s != "" {
		return ": " + s
	}
	return ""
}

// Install writes Name.service into Dir and, if start is set, runs
// daemon-reload and enable --now (and restart, when it replaced a unit
// file, so that a running service picks up the new one).
func (d Systemd) Install(s Spec, start bool) (Installed, error) {
	p := d.path(s.Name)
	_, statErr := os.Stat(p)
	replaced := statErr == nil
	if err := writeFileAtomic(p, []byte(SystemdUnit(s)), 0o644); err != nil {
		return Installed{}, err
	}
	unit := s.Name + ".service"
	by := "systemctl --user daemon-reload && systemctl --user enable --now " + unit
	linger := "to run it at boot without logging in: loginctl enable-linger $USER"
	in := Installed{Path: p}
	if !start {
		in.Notes = []string{"not started; start it with: " + by, linger}
		return in, nil
	}
	steps := [][]string{{"daemon-reload"}, {"enable", "--now", unit}}
	if replaced {
		steps = append(steps, []string{"restart", unit})
	}
	for _, st := range steps {
		if _, err := d.systemctl(st...); err != nil {
			return in, fmt.Errorf("%w\nthe unit is written at %s; start it by hand with: %s", err, p, by)
		}
	}
	in.Started = true
	in.Notes = []string{"logs: journalctl --user -u " + unit, linger}
	return in, nil
}

// Uninstall runs disable --now, removes the unit file and runs
// daemon-reload. A missing unit file is not an error (Removed false, no
// command run).
func (d Systemd) Uninstall(name string) (Removed, error) {
	p := d.path(name)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return Removed{Path: p}, nil
	}
	unit := name + ".service"
	if _, err := d.systemctl("disable", "--now", unit); err != nil {
		return Removed{Path: p}, fmt.Errorf("%w\nstop it by hand with: systemctl --user disable --now %s; then remove %s", err, unit, p)
	}
	if err := os.Remove(p); err != nil {
		return Removed{Path: p}, fmt.Errorf("removing the unit: %w", err)
	}
	if _, err := d.systemctl("daemon-reload"); err != nil {
		return Removed{Path: p, Removed: true}, fmt.Errorf("%w\nthe unit is removed; run by hand: systemctl --user daemon-reload", err)
	}
	return Removed{Path: p, Removed: true}, nil
}

// Status reports whether Name.service exists in Dir and what
// `systemctl --user is-active` says of it. is-active exits non-zero for
// every state but active, so its output is the answer whenever it printed
// one.
func (d Systemd) Status(name string) (Status, error) {
	st := Status{Name: name, Manager: "systemd", Path: d.path(name)}
	if _, err := os.Stat(st.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return st, nil
		}
		return st, fmt.Errorf("reading the unit: %w", err)
	}
	st.Installed = true
	out, err := d.run()("systemctl", "--user", "is-active", name+".service")
	if s := strings.TrimSpace(string(out)); s != "" && !strings.Contains(s, "\n") && !strings.Contains(s, " ") {
		st.State = s
		return st, nil
	}
	st.State = "unknown"
	if err != nil {
		st.Error = fmt.Sprintf("systemctl --user is-active %s.service: %v%s", name, err, outputSuffix(out))
	}
	return st, nil
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory and a rename, so that the manager never reads half a unit,
// creating the directory (0755) if needed.
func writeFileAtomic(path string, b []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
