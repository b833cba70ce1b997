package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// TestClockSkewDoctor runs three agents on this machine, one of them
// started with its clock 48 h fast (--debug-clock-offset). Doctor on a
// right device warns about the fast one, names it as the one to fix and
// reports no skew (within a second) for the other agent on this machine;
// doctor on the fast one says its own clock is the wrong one. An edit the
// fast device makes is dated by the true time on the others.
func TestClockSkewDoctor(t *testing.T) {
	a, fast := pair(t)
	right := newDevice(t, "c")
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	right.must("join", lines[len(lines)-1], right.folder)
	fast.upArgs = []string{"--mdns=false", "--debug-clock-offset=48h"}
	fast.up()
	right.up()
	waitInSync(t, a, fast, right)
	fastID, rightID := fast.status().Device, right.status().Device
	// Doctor measures the members it is connected to, and in sync says
	// nothing of that: fast and right may still be meeting through a
	// alone (the fast device then had one sample and its correction was
	// the median of 0 and -48 h, -24 h).
	for _, d := range []*device{a, fast, right} {
		waitStatus(t, d, time.Minute, func(st api.Status) error {
			connected := 0
			for _, p := range st.Peers {
				if p.Role == "device" && p.Connection != "offline" {
					connected++
				}
			}
			if connected < 2 {
				return fmt.Errorf("%s: connected to %d of the 2 other devices", d.name, connected)
			}
			return nil
		})
	}

	doctor := func(d *device) (int, api.Diagnosis) {
		t.Helper()
		code, out, stderr := d.exitCode("doctor", "--json")
		var diag api.Diagnosis
		if err := json.Unmarshal([]byte(out), &diag); err != nil {
			t.Fatalf("%s: doctor --json: exit %d, %v: %s", d.name, code, err, stderr)
		}
		return code, diag
	}
	peer := func(diag api.Diagnosis, id string) api.PeerDiagnosis {
		for _, p := range diag.Peers {
			if p.ID == id {
				return p
			}
		}
		t.Fatalf("doctor lists no peer %s: %+v", id, diag.Peers)
		return api.PeerDiagnosis{}
	}
	skewFinding := func(diag api.Diagnosis, id string) *api.Finding {
		for i, f := range diag.Findings {
			if f.Kind == "clock-skew" && f.Peer == id {
				return &diag.Findings[i]
			}
		}
		return nil
	}

	// Doctor measures each reachable peer while it runs.
	code, diag := doctor(a)
	if code != 0 {
		t.Errorf("doctor on a: exit %d, want 0 (a skew is a warning)", code)
	}
	if p := peer(diag, fastID); p.ClockSkewMillis == nil || (time.Duration(*p.ClockSkewMillis)*time.Millisecond-48*time.Hour).Abs() > time.Second {
		t.Errorf("a's doctor: fast device's skew %v ms, want 48 h within 1 s", p.ClockSkewMillis)
	}
	if p := peer(diag, rightID); p.ClockSkewMillis == nil || *p.ClockSkewMillis > 1000 || *p.ClockSkewMillis < -1000 {
		t.Errorf("a's doctor: skew to the agent on the same machine %v ms, want under 1 s", p.ClockSkewMillis)
	}
	for _, id := range []string{fastID, rightID} {
		if p := peer(diag, id); p.ClockSkewMillis != nil && p.ClockErrorMillis != nil {
			t.Logf("a's doctor: peer %s skew %d ms, error bound %.3f ms", id[len(id)-8:], *p.ClockSkewMillis, *p.ClockErrorMillis)
		}
	}
	f := skewFinding(diag, fastID)
	if f == nil || f.Severity != api.SeverityWarning || !strings.Contains(f.Fix, "set the clock on") || !strings.Contains(f.Fix, "NTP") {
		t.Errorf("a's doctor: clock-skew finding %+v, want a warning whose fix says to set the fast device's clock and turn on NTP", f)
	}
	if f := skewFinding(diag, rightID); f != nil {
		t.Errorf("a's doctor: clock-skew finding for an agent on the same machine: %+v", f)
	}
	if c := diag.ClockCorrectionMillis; c > 1000 || c < -1000 {
		t.Errorf("a's clock correction %d ms, want about 0 (two of three clocks agree with it)", c)
	}

	// The fast device's own doctor: its clock is the odd one out.
	_, diag = doctor(fast)
	if c := time.Duration(diag.ClockCorrectionMillis) * time.Millisecond; (c + 48*time.Hour).Abs() > time.Second {
		t.Errorf("fast device's clock correction %v, want -48h within 1 s", c)
	}
	if f := skewFinding(diag, rightID); f == nil || !strings.Contains(f.Fix, "set this device's clock") {
		t.Errorf("fast device's doctor: clock-skew finding %+v, want one saying to set this device's clock", f)
	}

	// An edit on the fast device is dated by the members' time.
	before := time.Now()
	fast.write("note.md", []byte("written on the fast device\n"))
	waitSame(t, a, fast, time.Minute, func(m map[string]string) error {
		if m["note.md"] != "file:written on the fast device\n" {
			return fmt.Errorf("note.md not synced")
		}
		return nil
	})
	var h api.History
	if err := json.Unmarshal([]byte(a.must("history", "--json", filepath.Join(a.folder, "note.md"))), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Versions) == 0 {
		t.Fatal("no history of note.md")
	}
	if got := h.Versions[0].Time; got.Before(before.Add(-time.Minute)) || got.After(time.Now().Add(time.Minute)) {
		t.Errorf("fast device's edit dated %v, want the true time (about %v)", got, before.UTC())
	}
}
