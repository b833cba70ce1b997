package service

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSystemdUnit(t *testing.T) {
	s := Spec{
		Name:          "weft",
		Description:   "weft agent",
		Documentation: "man:weft-up(1)",
		Exe:           "/usr/local/bin/weft",
		Args:          []string{"--home", "/home/ann/My Sync 100%", "up", "--quiet"},
	}
	want := `[Unit]
Description=weft agent
Documentation=man:weft-up(1)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
ExecStart=/usr/local/bin/weft --home "/home/ann/My Sync 100%%" up --quiet
Restart=on-failure
RestartSec=5s
StandardOutput=journal
StandardError=journal

[Install]
WantedBy=default.target
`
	if diff := cmp.Diff(want, SystemdUnit(s)); diff != "" {
		t.Fatalf("unit differs (-want +got):\n%s", diff)
	}
	s.Documentation = ""
	if got := SystemdUnit(s); strings.Contains(got, "Documentation") {
		t.Fatalf("empty Documentation written:\n%s", got)
	}
}

func TestSystemdQuote(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "--home", "--home"},
		{"path", "/home/ann/.config/weft", "/home/ann/.config/weft"},
		{"percent", "/h/100%", "/h/100%%"},
		{"dollar", "/h/$HOME", "/h/$$HOME"},
		{"braced variable", "${X}", "$${X}"},
		{"space", "/h/a b", `"/h/a b"`},
		{"space and percent", "/h/a b%n", `"/h/a b%%n"`},
		{"double quote", `a"b`, `"a\"b"`},
		{"single quote", "it's", `"it's"`},
		{"backslash", `a\b`, `"a\\b"`},
		{"tab and newline", "a\tb\nc", `"a\tb\nc"`},
		{"control", "a\x01b", `"a\x01b"`},
		{"empty", "", `""`},
		{"semicolon alone", ";", `";"`},
		{"semicolon inside", "a;b", "a;b"},
		{"unicode", "/h/Über", "/h/Über"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := systemdQuote(tt.in); got != tt.want {
				t.Fatalf("systemdQuote(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestSystemdUnitKeepsLines(t *testing.T) {
	got := SystemdUnit(Spec{Name: "x", Description: "a\nExecStartPre=/bin/evil", Exe: "/x"})
	if strings.Contains(got, "\nExecStartPre") {
		t.Fatalf("a newline in Description started a new setting:\n%s", got)
	}
}

func TestLaunchdPlist(t *testing.T) {
	s := Spec{
		Name:        "weft-relay",
		Description: "weft relay",
		Exe:         "/opt/weft/bin/weft",
		Args:        []string{"relay", "--home", "/Users/ann/R&D <relay>"},
	}
	want := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>org.weftsync.weft-relay</string>
	<key>ProgramArguments</key>
	<array>
		<string>/opt/weft/bin/weft</string>
		<string>relay</string>
		<string>--home</string>
		<string>/Users/ann/R&amp;D &lt;relay&gt;</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>5</integer>
	<key>StandardOutPath</key>
	<string>/Users/ann/Library/Logs/weft/weft-relay.log</string>
	<key>StandardErrorPath</key>
	<string>/Users/ann/Library/Logs/weft/weft-relay.log</string>
</dict>
</plist>
`
	got := LaunchdPlist(s, "/Users/ann/Library/Logs/weft/weft-relay.log")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plist differs (-want +got):\n%s", diff)
	}
	// Well-formed XML whose strings read back as the arguments.
	var strs []string
	dec := xml.NewDecoder(strings.NewReader(got))
	inString := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inString = tok.Name.Local == "string"
		case xml.CharData:
			if inString {
				strs = append(strs, string(tok))
			}
		case xml.EndElement:
			inString = false
		}
	}
	if len(strs) < 5 || strs[4] != "/Users/ann/R&D <relay>" {
		t.Fatalf("strings read back %q, want the home as given", strs)
	}
}
