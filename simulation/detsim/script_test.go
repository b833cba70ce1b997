package detsim

import (
	"bytes"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/internal/scripttest"
	"github.com/weftsync/weft/protocol/engine"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt scripts (make rewrite)")

// TestGoldenScripts runs testdata/*.txt: scripted histories of the deterministic
// tier, each command followed by "----" and its expected output up to a
// blank line (the trace lines the command produced, or what it prints).
// Regenerate with make rewrite. They pin findings in a form a person can
// read: what each device did and decided, step by step.
//
// Commands (devices are d0, d1, ...):
//
//	devices N                 start a run of N devices with right clocks
//	write DEV PATH "CONTENT"  a user writes the file (go-quoted content)
//	delete DEV PATH           a user deletes it
//	rename DEV FROM TO        a user moves it, replacing TO
//	scan DEV                  the device records what changed
//	send FROM TO [AUTHOR N]   FROM delivers what TO lacks (only AUTHOR's
//	                          entries up to seq N, when given)
//	reconcile DEV             the device carries out its dirty paths
//	tick DURATION             the virtual clock moves on
//	kill DEV                  killed in its next carry-out, then restarted
//	heal                      everyone exchanges and reconciles until quiet
//	tree DEV                  the device's disk
//	heads DEV PATH            the path's heads on the device
//	check                     the end-of-run checks: ok, or the failures
func TestGoldenScripts(t *testing.T) {
	scripttest.RunDir(t, *update, func(t *testing.T) func(string) (string, error) {
		var s *sim
		var trace bytes.Buffer
		return func(cmd string) (string, error) {
			before := trace.Len()
			printed, err := runCommand(&s, &trace, cmd)
			return printed + stripTrace(trace.String()[before:]), err
		}
	})
}

// stripTrace drops each trace line's step and time.
func stripTrace(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l == "" {
			continue
		}
		if f := strings.SplitN(l, " ", 3); len(f) == 3 {
			l = f[2]
		}
		b.WriteString(l)
	}
	return b.String()
}

func runCommand(sp **sim, trace *bytes.Buffer, cmd string) (string, error) {
	args, err := splitArgs(cmd)
	if err != nil {
		return "", err
	}
	if args[0] == "devices" {
		n, err := strconv.Atoi(arg(args, 1))
		if err != nil {
			return "", err
		}
		*sp = newSim(Config{Devices: n, Trace: trace, RightClocks: true})
		return "", nil
	}
	s := *sp
	if s == nil {
		return "", fmt.Errorf("no devices yet")
	}
	dev := func(i int) (*device, error) {
		a := arg(args, i)
		n, err := strconv.Atoi(strings.TrimPrefix(a, "d"))
		if err != nil || !strings.HasPrefix(a, "d") || n < 0 || n >= len(s.devs) {
			return nil, fmt.Errorf("no device %q", a)
		}
		return s.devs[n], nil
	}
	d, _ := dev(1)
	need := func() error {
		if d == nil {
			return fmt.Errorf("%s needs a device", args[0])
		}
		return nil
	}
	switch args[0] {
	case "write":
		if err := need(); err != nil {
			return "", err
		}
		s.userWrite(d, arg(args, 2), []byte(arg(args, 3)))
	case "delete":
		if err := need(); err != nil {
			return "", err
		}
		s.userDelete(d, arg(args, 2))
	case "rename":
		if err := need(); err != nil {
			return "", err
		}
		s.userRename(d, arg(args, 2), arg(args, 3))
	case "scan":
		if err := need(); err != nil {
			return "", err
		}
		return "", s.scanPaths(d, sortedKeys(d.unscanned), engine.ScanSettled)
	case "send":
		to, err := dev(2)
		if err != nil || d == nil {
			return "", fmt.Errorf("send FROM TO: %v", err)
		}
		if len(args) > 3 {
			author, err := dev(3)
			if err != nil {
				return "", err
			}
			upTo, err := strconv.Atoi(arg(args, 4))
			if err != nil {
				return "", err
			}
			return "", s.sendUpTo(d, to, author, uint64(upTo))
		}
		return "", s.send(d, to, true)
	case "reconcile":
		if err := need(); err != nil {
			return "", err
		}
		return "", s.reconcile(d)
	case "tick":
		dt, err := time.ParseDuration(arg(args, 1))
		if err != nil {
			return "", err
		}
		s.now = s.now.Add(dt)
	case "kill":
		if err := need(); err != nil {
			return "", err
		}
		d.crashPending = true
		if err := s.reconcile(d); err != nil {
			return "", err
		}
		if d.crashPending {
			d.crashPending = false
			return "", s.restart(d, false)
		}
	case "heal":
		return "", s.heal()
	case "tree":
		if err := need(); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range sortedKeys(d.disk) {
			fmt.Fprintf(&b, "%s %q\n", p, d.disk[p])
		}
		if b.Len() == 0 {
			return "empty\n", nil
		}
		return b.String(), nil
	case "heads":
		if err := need(); err != nil {
			return "", err
		}
		return s.describeHeads(d, arg(args, 2)) + "\n", nil
	case "check":
		s.res.Failures = nil
		s.check()
		if len(s.res.Failures) == 0 {
			return "ok\n", nil
		}
		return "", nil // the failures are in the trace
	default:
		return "", fmt.Errorf("unknown command %q", args[0])
	}
	return "", nil
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// splitArgs splits on spaces, keeping a go-quoted argument whole.
func splitArgs(cmd string) ([]string, error) {
	var out []string
	for cmd = strings.TrimSpace(cmd); cmd != ""; cmd = strings.TrimSpace(cmd) {
		if cmd[0] == '"' {
			q, err := strconv.QuotedPrefix(cmd)
			if err != nil {
				return nil, err
			}
			u, _ := strconv.Unquote(q)
			out = append(out, u)
			cmd = cmd[len(q):]
			continue
		}
		i := strings.IndexByte(cmd, ' ')
		if i < 0 {
			i = len(cmd)
		}
		out = append(out, cmd[:i])
		cmd = cmd[i:]
	}
	return out, nil
}
