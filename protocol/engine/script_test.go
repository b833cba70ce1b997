package engine

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/internal/scripttest"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt scripts (make rewrite)")

// TestGoldenEngineScripts runs testdata/*.txt: the reconcile engine's
// rules as raft's interaction tests show theirs, events in and Ready out,
// each command followed by "----" and what it printed. Regenerate with
// make rewrite.
//
// Commands (devices are a, b, c; versions are DEV:SEQ):
//
//	engine [MIN] [casefold]        a new engine; the mass-delete guard holds
//	                               deletions of more than half of a folder
//	                               of more than MIN files (default 3);
//	                               casefold: names differing in case are one
//	file ID PATH BYTE [SUP...]     a file version folded in (Touched), its
//	                               clock after every version before it
//	delete ID PATH [SUP...]        a deletion folded in (Touched)
//	index PATH ID BYTE             the folder index records ID's content
//	unindex PATH                   the folder index drops PATH
//	current PATH...                Current
//	touch PATH...                  Touched
//	tick DURATION                  the clock moves on
//	ready                          Ready: the pass, in order
//	decide PATH                    Decide
//	settle PATH                    Settled
//	fail PATH [wait|ERROR]         Failed
//	advance                        Advance
//	state                          dirty paths, pending, errors, waits
//	held                           the incoming deletions the guard holds
func TestGoldenEngineScripts(t *testing.T) {
	scripttest.RunDir(t, *update, func(t *testing.T) func(string) (string, error) {
		var w *scriptWorld
		return func(cmd string) (string, error) {
			args := strings.Fields(cmd)
			if args[0] == "engine" {
				min, fold := 3, false
				for _, a := range args[1:] {
					if a == "casefold" {
						fold = true
						continue
					}
					n, err := strconv.Atoi(a)
					if err != nil {
						return "", err
					}
					min = n
				}
				w = newScriptWorld(min)
				if fold {
					w.e.fold = strings.ToLower
				}
				return "", nil
			}
			if w == nil {
				return "", errors.New("no engine yet")
			}
			return w.run(args)
		}
	})
}

// scriptWorld is an engine with the graph and folder index it reads (a
// View).
type scriptWorld struct {
	e     *Engine
	g     *protocol.Graph
	index map[string]Disk
	now   time.Time
	clock uint64 // Lamport: each version folded in comes after the last
	rd    *Ready
}

func newScriptWorld(minFiles int) *scriptWorld {
	w := &scriptWorld{g: protocol.NewGraph(), index: map[string]Disk{}, now: t0}
	w.e = New(Config{MassDelete: protocol.MassDeletePolicy{Percent: 50, MinFiles: minFiles, MaxFiles: 1000}})
	w.e.Tick(w.now)
	return w
}

func (w *scriptWorld) Graph() *protocol.Graph { return w.g }
func (w *scriptWorld) Lookup(p string) (Disk, bool) {
	d, ok := w.index[p]
	return d, ok
}
func (w *scriptWorld) Files() int                      { return len(w.index) }
func (w *scriptWorld) DeletionConfirmed(p string) bool { return false }
func (w *scriptWorld) WinnerIsDeletion(p string) bool  { return IsDeletion(w.g, p) }

var scriptDevices = map[string]keys.DeviceID{"a": devA, "b": devB, "c": {3}}

func parseID(s string) (protocol.VersionID, error) {
	dev, seq, ok := strings.Cut(s, ":")
	d, known := scriptDevices[dev]
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || !known || err != nil {
		return protocol.VersionID{}, fmt.Errorf("version %q: want DEV:SEQ with DEV one of a, b, c", s)
	}
	return protocol.VersionID{Author: d, Seq: n}, nil
}

func idName(id protocol.VersionID) string {
	for n, d := range scriptDevices {
		if d == id.Author {
			return fmt.Sprintf("%s:%d", n, id.Seq)
		}
	}
	return "-"
}

func parseIDs(ss []string) ([]protocol.VersionID, error) {
	var out []protocol.VersionID
	for _, s := range ss {
		id, err := parseID(s)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func (w *scriptWorld) run(args []string) (string, error) {
	need := func(n int) error {
		if len(args) < n+1 {
			return fmt.Errorf("%s needs %d arguments", args[0], n)
		}
		return nil
	}
	switch args[0] {
	case "file", "delete":
		min := 3
		if args[0] == "delete" {
			min = 2
		}
		if err := need(min); err != nil {
			return "", err
		}
		id, err := parseID(args[1])
		if err != nil {
			return "", err
		}
		sup, err := parseIDs(args[min+1:])
		if err != nil {
			return "", err
		}
		w.clock++
		v := protocol.Version{ID: id, Path: args[2], Kind: protocol.KindDeletion, Clock: w.clock, Time: int64(w.clock), Supersedes: sup}
		if args[0] == "file" {
			b, err := strconv.Atoi(args[3])
			if err != nil {
				return "", err
			}
			v.Kind, v.ContentHash = protocol.KindFile, [32]byte{byte(b)}
		}
		if err := w.g.Add(v); err != nil {
			return "", err
		}
		w.e.Step(Touched{Paths: []string{v.Path}})
	case "index":
		if err := need(3); err != nil {
			return "", err
		}
		id, err := parseID(args[2])
		if err != nil {
			return "", err
		}
		b, err := strconv.Atoi(args[3])
		if err != nil {
			return "", err
		}
		w.index[args[1]] = Disk{Version: id, Kind: protocol.KindFile, ContentHash: [32]byte{byte(b)}}
	case "unindex":
		if err := need(1); err != nil {
			return "", err
		}
		delete(w.index, args[1])
	case "current":
		w.e.Step(Current{Paths: args[1:]})
	case "touch":
		w.e.Step(Touched{Paths: args[1:]})
	case "tick":
		if err := need(1); err != nil {
			return "", err
		}
		dt, err := time.ParseDuration(args[1])
		if err != nil {
			return "", err
		}
		w.now = w.now.Add(dt)
		w.e.Tick(w.now)
	case "ready":
		if !w.e.HasReady() {
			return "nothing ready\n", nil
		}
		rd := w.e.Ready(w)
		w.rd = &rd
		var b strings.Builder
		fmt.Fprintf(&b, "adds %v\ndeletions %v\nafter deletions %v\n", rd.Adds, rd.Deletions, rd.AfterDeletions)
		if len(rd.Withheld) > 0 {
			fmt.Fprintf(&b, "withheld %v (hold began: %v, %d of %d files)\n", rd.Withheld, rd.Guard.Began, rd.Guard.HeldFiles, rd.Guard.IndexFiles)
		}
		return b.String(), nil
	case "decide":
		if err := need(1); err != nil {
			return "", err
		}
		d, err := w.e.Decide(args[1], w)
		if err != nil {
			return "", err
		}
		switch d.Act {
		case ActNothing:
			return "nothing\n", nil
		case ActWait:
			if d.WaitBegan {
				return "wait (began)\n", nil
			}
			return "wait\n", nil
		}
		return fmt.Sprintf("carry out: %v, winner %s, %d copies\n", d.Decision.Outcome, idName(d.Decision.Winner.ID), len(d.Decision.Copies)), nil
	case "settle":
		if err := need(1); err != nil {
			return "", err
		}
		w.e.Step(Settled{Path: args[1]})
	case "fail":
		if err := need(1); err != nil {
			return "", err
		}
		f := Failed{Path: args[1]}
		switch {
		case len(args) > 2 && args[2] == "wait":
			f.Waiting = true
		case len(args) > 2:
			f.Err = errors.New(strings.Join(args[2:], " "))
		}
		w.e.Step(f)
	case "advance":
		if w.rd == nil {
			return "", errors.New("advance without a ready pass")
		}
		w.e.Advance(*w.rd)
		w.rd = nil
	case "held":
		return fmt.Sprintf("held incoming %v\n", w.e.Deletes.HeldIncoming().Paths), nil
	case "state":
		var b strings.Builder
		fmt.Fprintf(&b, "dirty %v\npending %d\n", w.e.DirtyPaths(), w.e.Pending())
		w.e.Errs(func(p, err string) { fmt.Fprintf(&b, "error %s: %s\n", p, err) })
		for _, p := range w.g.Paths() {
			if since, ok := w.e.Waiting(p); ok {
				fmt.Fprintf(&b, "waiting %s since +%v\n", p, since.Sub(t0))
			}
		}
		return b.String(), nil
	default:
		return "", fmt.Errorf("unknown command %q", args[0])
	}
	return "", nil
}
