package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Launchd installs launchd agents of the logged-in user. It is safe for
// concurrent use only on different names.
type Launchd struct {
	// Dir is ~/Library/LaunchAgents.
	Dir string
	// LogDir receives NAME.log, the agent's standard output and error
	// (launchd has no journal): ~/Library/Logs/weft.
	LogDir string
	// UID is the user's ID, for the gui/UID domain.
	UID int
	// Run runs launchctl; nil is ExecRunner.
	Run Runner
}

func (d Launchd) run() Runner {
	if d.Run == nil {
		return ExecRunner
	}
	return d.Run
}

func (d Launchd) path(name string) string {
	return filepath.Join(d.Dir, LaunchdLabel(name)+".plist")
}

func (d Launchd) domain() string { return "gui/" + strconv.Itoa(d.UID) }

func (d Launchd) launchctl(args ...string) ([]byte, error) {
	out, err := d.run()("launchctl", args...)
	if err != nil {
		return out, fmt.Errorf("launchctl %s: %w%s", strings.Join(args, " "), err, outputSuffix(out))
	}
	return out, nil
}

// Install writes the plist into Dir (and creates LogDir) and, if start is
// set, loads it with `launchctl bootstrap gui/UID PLIST`, which starts it
// (RunAtLoad). A replaced plist is booted out first: launchd refuses to
// bootstrap a label it has loaded.
func (d Launchd) Install(s Spec, start bool) (Installed, error) {
	p := d.path(s.Name)
	_, statErr := os.Stat(p)
	replaced := statErr == nil
	logPath := filepath.Join(d.LogDir, s.Name+".log")
	if err := os.MkdirAll(d.LogDir, 0o755); err != nil {
		return Installed{}, fmt.Errorf("creating the log directory: %w", err)
	}
	if err := writeFileAtomic(p, []byte(LaunchdPlist(s, logPath)), 0o644); err != nil {
		return Installed{}, err
	}
	by := "launchctl bootstrap " + d.domain() + " " + p
	in := Installed{Path: p}
	if !start {
		in.Notes = []string{"not started; start it with: " + by, "logs: " + logPath}
		return in, nil
	}
	if replaced {
		// Not loaded is fine: the old plist may never have been started.
		_, _ = d.launchctl("bootout", d.domain()+"/"+LaunchdLabel(s.Name))
	}
	if _, err := d.launchctl("bootstrap", d.domain(), p); err != nil {
		return in, fmt.Errorf("%w\nthe agent is written at %s; start it by hand with: %s", err, p, by)
	}
	in.Started = true
	in.Notes = []string{"logs: " + logPath}
	return in, nil
}

// Uninstall boots the agent out and removes its plist. A missing plist is
// not an error (Removed false, no command run); neither is an agent that
// is not loaded.
func (d Launchd) Uninstall(name string) (Removed, error) {
	p := d.path(name)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return Removed{Path: p}, nil
	}
	target := d.domain() + "/" + LaunchdLabel(name)
	if _, err := d.launchctl("print", target); err == nil {
		if _, err := d.launchctl("bootout", target); err != nil {
			return Removed{Path: p}, fmt.Errorf("%w\nstop it by hand with: launchctl bootout %s; then remove %s", err, target, p)
		}
	}
	if err := os.Remove(p); err != nil {
		return Removed{Path: p}, fmt.Errorf("removing the agent: %w", err)
	}
	return Removed{Path: p, Removed: true}, nil
}

// Status reports whether the plist exists and the state that
// `launchctl print gui/UID/LABEL` gives ("not loaded" when it fails, as it
// does for a label launchd does not know).
func (d Launchd) Status(name string) (Status, error) {
	st := Status{Name: name, Manager: "launchd", Path: d.path(name)}
	if _, err := os.Stat(st.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return st, nil
		}
		return st, fmt.Errorf("reading the agent: %w", err)
	}
	st.Installed = true
	out, err := d.launchctl("print", d.domain()+"/"+LaunchdLabel(name))
	if err != nil {
		st.State = "not loaded"
		st.Error = err.Error()
		return st, nil
	}
	st.State = "unknown"
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " = "); ok && k == "state" {
			st.State = v
			break
		}
	}
	return st, nil
}
