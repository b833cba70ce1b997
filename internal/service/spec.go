package service

import (
	"encoding/xml"
	"os/exec"
	"strings"
)

// Spec is what to install: one long-running weft command.
type Spec struct {
	// Name is the service's name: "weft" or "weft-relay". The systemd unit
	// is Name.service, the launchd label org.weftsync.Name, the Windows
	// service Name.
	Name string
	// Description is one line for the service manager's listings.
	Description string
	// Documentation is a URI (man:weft(1), https://...) for systemd's
	// Documentation=; empty leaves the line out.
	Documentation string
	// Exe is the absolute path of the weft binary.
	Exe string
	// Args follow Exe, e.g. --home /abs/home up --quiet.
	Args []string
}

// Installer installs, removes and inspects services of one service
// manager. Implementations: Systemd, Launchd, and on Windows the service
// control manager (Default).
type Installer interface {
	// Install writes the service (replacing one of the same name) and,
	// if start is set, enables and starts it. On an error from the
	// manager the service's file stays written and the error says what
	// to run by hand.
	Install(s Spec, start bool) (Installed, error)
	// Uninstall stops and removes the service named name. A service that
	// is not installed is not an error: Removed is false.
	Uninstall(name string) (Removed, error)
	// Status reports whether the service is installed and what the
	// manager says of it.
	Status(name string) (Status, error)
}

// Installed describes what Install did.
type Installed struct {
	// Path is the unit or plist file written (empty on Windows).
	Path string
	// Started reports that the manager was asked to enable and start it.
	Started bool
	// Notes are advice for the user, one line each (how to start it by
	// hand, where its logs go, how to run it at boot).
	Notes []string
}

// Removed describes what Uninstall did.
type Removed struct {
	Path    string
	Removed bool
}

// Status is the state of one service. Its JSON is the shape of
// `weft service status --json` (docs/cli.md).
type Status struct {
	Name string `json:"name"`
	// Manager is "systemd", "launchd" or "windows".
	Manager string `json:"manager"`
	// Path is the unit or plist file (empty on Windows).
	Path      string `json:"path,omitempty"`
	Installed bool   `json:"installed"`
	// State is the manager's word for it: systemd's is-active (active,
	// inactive, failed, activating, ...), launchd's state (running,
	// not running, ...) or Windows' (running, stopped, ...); "" when not
	// installed, "unknown" when the manager could not be asked (Error
	// says why).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// Runner runs a service manager's command and returns its combined
// output. The default, ExecRunner, runs it with os/exec; tests pass a
// fake.
type Runner func(name string, args ...string) ([]byte, error)

// ExecRunner runs name with args and returns its combined output.
func ExecRunner(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}

// SystemdUnit renders s as a systemd user unit. The result restarts the
// command 5 s after it fails, sends its output to the journal and is
// wanted by default.target (started at login, or at boot with lingering).
func SystemdUnit(s Spec) string {
	var b strings.Builder
	b.WriteString("[Unit]\n")
	b.WriteString("Description=" + oneLine(s.Description) + "\n")
	if s.Documentation != "" {
		b.WriteString("Documentation=" + oneLine(s.Documentation) + "\n")
	}
	b.WriteString("After=network-online.target\n")
	b.WriteString("Wants=network-online.target\n")
	b.WriteString("\n[Service]\n")
	b.WriteString("Type=simple\n")
	b.WriteString("ExecStart=" + systemdQuote(s.Exe))
	for _, a := range s.Args {
		b.WriteString(" " + systemdQuote(a))
	}
	b.WriteString("\n")
	b.WriteString("Restart=on-failure\n")
	b.WriteString("RestartSec=5s\n")
	b.WriteString("StandardOutput=journal\n")
	b.WriteString("StandardError=journal\n")
	b.WriteString("\n[Install]\n")
	b.WriteString("WantedBy=default.target\n")
	return b.String()
}

// oneLine keeps a free-text value on its line: systemd would read a
// newline as the end of the setting.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// systemdQuote writes one argument of ExecStart= so that systemd passes
// it through unchanged (systemd.service(5), "Command lines"; systemd.unit(5),
// "Specifiers"): % starts a specifier and is doubled, $ starts a variable
// and is doubled; an argument that is empty or holds white space, quotes,
// backslashes, control characters or a lone ";" is put in double quotes,
// inside which \ and " are escaped and control characters are written as
// C escapes.
func systemdQuote(a string) string {
	a = strings.NewReplacer("%", "%%", "$", "$$").Replace(a)
	if a != "" && a != ";" && !strings.ContainsAny(a, " \t\n\r\"'\\") && !hasControl(a) {
		return a
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range a {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				b.WriteString(`\x` + string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&0xf]))
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// LaunchdLabel is the launchd label of the service named name.
func LaunchdLabel(name string) string { return "org.weftsync." + name }

// LaunchdPlist renders s as a launchd agent's property list. launchd
// starts it at login (RunAtLoad) and again whenever it exits unsuccessfully
// (KeepAlive.SuccessfulExit false: a clean `weft up` shutdown stays
// stopped). launchd has no journal: standard output and error go to
// logPath.
func LaunchdPlist(s Spec, logPath string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
`)
	key := func(k string) { b.WriteString("\t<key>" + k + "</key>\n") }
	str := func(indent, v string) { b.WriteString(indent + "<string>" + xmlText(v) + "</string>\n") }
	key("Label")
	str("\t", LaunchdLabel(s.Name))
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	str("\t\t", s.Exe)
	for _, a := range s.Args {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	key("ThrottleInterval")
	b.WriteString("\t<integer>5</integer>\n")
	key("StandardOutPath")
	str("\t", logPath)
	key("StandardErrorPath")
	str("\t", logPath)
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

// xmlText escapes s for XML character data.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
