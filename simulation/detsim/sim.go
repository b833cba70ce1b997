package detsim

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
)

// Config is one deterministic run.
type Config struct {
	Seed uint64
	// Devices is the number of devices; default 4.
	Devices int
	// Steps is the number of scheduled operations; default 120.
	Steps int
	// Paths is the number of file names users start from; default 4.
	// Users also edit and delete the conflict copies the rules write.
	Paths int
	// Rules are the devices' sync decisions; zero is the product's.
	Rules engine.Rules
	// RightClocks gives every device a right clock (by default one in
	// five is hours off); scripts use it so their times read plainly.
	RightClocks bool
	// MassDelete is every device's mass-delete policy; zero is
	// SimMassDelete, a policy small enough for the simulation's folders
	// of a few files.
	MassDelete protocol.MassDeletePolicy
	// Trace, if set, receives the run's trace, one event per line: the
	// bytes Result.Digest is the hash of.
	Trace io.Writer

	// StopAnywhere lets a device also stop and start again between any two
	// operations (a shutdown, a power cut), and before the heal every
	// device receives everything and stops before applying it: entries
	// received and not applied, what engine.Engine.Reopened must keep
	// dirty.
	// Off, devices restart only when killed in a reconcile or losing their
	// index, and the seeds of earlier findings keep their schedules.
	StopAnywhere bool

	// TestOnlyNoApplyRace makes the devices record a save that lands
	// right after an apply by the usual rule, never asking their
	// engine.RecentApplies: a device with the rule left out, for the test
	// that shows the lost-write check catches it.
	TestOnlyNoApplyRace bool
	// TestOnlyIgnoreConfirmed makes the devices' guards see no deletion as
	// confirmed by its author's user (engine.GuardIndex.DeletionConfirmed
	// always false): a device that holds deletions another user already
	// accepted, for the test that shows the checks catch it.
	TestOnlyIgnoreConfirmed bool
}

// SimMassDelete is the mass-delete policy the simulation runs by default:
// the product's rule (more than half of the folder) at a scale its
// folders reach, a folder of more than 3 files.
var SimMassDelete = protocol.MassDeletePolicy{Percent: 50, MinFiles: 3, MaxFiles: 1000}

// Result is what a run did and found.
type Result struct {
	Seed  uint64 `json:"seed"`
	Steps int    `json:"steps"`
	// Digest is the BLAKE3 hash of the trace: two runs of one seed must
	// give the same digest.
	Digest    string   `json:"digest"`
	Failures  []string `json:"failures,omitempty"`
	Entries   int      `json:"entries"`
	Conflicts int      `json:"conflict_copies"`
	Merges    int      `json:"merges"`
	Waits     int      `json:"history_waits"`
	Adoptions int      `json:"adopted_heads"`
	Restarts  int      `json:"restarts"`
	// Holds counts the mass-delete holds begun (local and incoming);
	// Accepts and Rejects the users' decisions about them.
	Holds   int `json:"deletion_holds"`
	Accepts int `json:"deletion_accepts"`
	Rejects int `json:"deletion_rejects"`
	// RacingSaves counts the saves made from the content before an apply
	// and landing right after it; ApplyRaces the local changes
	// engine.RecentApplies took for such saves (racing saves, and user
	// edits that happened to follow an apply as fast).
	RacingSaves int `json:"racing_saves"`
	ApplyRaces  int `json:"apply_races"`
	// Stops counts the devices stopped between two operations
	// (StopAnywhere), not counting the stop before the heal.
	Stops      int `json:"stops,omitempty"`
	HealRounds int `json:"heal_rounds"`
	Files      int `json:"files_at_end"`
}

// OK reports whether every check passed.
func (r Result) OK() bool { return len(r.Failures) == 0 }

// userFile is a file version a user's write became (at a scan).
type userFile struct {
	id   protocol.VersionID
	hash [32]byte
}

// origin is a content a version put at a path as new. kept: the version
// is a user's rejection of held incoming deletions, which keeps what was
// there.
type origin struct {
	path string
	hash [32]byte
	kept bool
}

// sim is one run: the devices, the virtual clock, the content every
// recorded version names (content-addressed, so available to all), and
// the trace.
type sim struct {
	cfg  Config
	rng  *rand.Rand
	now  time.Time
	step int
	devs []*device

	content   map[[32]byte][]byte
	userFiles []userFile
	// origins are the versions that put a content at a path as new: a
	// user's write or a clean merge (the copy check's exemption).
	origins []origin
	// replaced counts, per content, the knowing replacements of it: a
	// user who edited or deleted a file while it held it, or a clean merge
	// of it. A user's rejection of held deletions takes theirs back.
	replaced map[[32]byte]int
	// restored are the files a rejected local hold brought back;
	// accepted the deletions recorded after a user accepted them
	// (check.go).
	restored []restoredFile
	accepted []acceptedDeletion
	// acceptedIDs are the versions of accepted.
	acceptedIDs map[protocol.VersionID]bool
	writes      int
	changed     bool

	trace hash.Hash
	res   Result
}

// maxHealRounds bounds the exchange-and-reconcile rounds after the
// schedule; a run that needs more did not settle.
const maxHealRounds = 40

// Run runs one seed and checks the end state.
func Run(cfg Config) Result {
	s := newSim(cfg)
	err := s.schedule()
	if err == nil {
		err = s.heal()
	}
	return s.finish(err)
}

// newSim sets up a run: cfg's defaults, the seeded generator, the devices
// (one in five with a clock hours off).
func newSim(cfg Config) *sim {
	if cfg.Devices <= 0 {
		cfg.Devices = 4
	}
	if cfg.Steps <= 0 {
		cfg.Steps = 120
	}
	if cfg.Paths <= 0 {
		cfg.Paths = 4
	}
	s := &sim{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x77656674)),
		now:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		content: map[[32]byte][]byte{}, replaced: map[[32]byte]int{},
		acceptedIDs: map[protocol.VersionID]bool{},
		trace:       blake3.New(32, nil),
		res:         Result{Seed: cfg.Seed, Steps: cfg.Steps},
	}
	if cfg.MassDelete == (protocol.MassDeletePolicy{}) {
		s.cfg.MassDelete = SimMassDelete
	}
	for i := range cfg.Devices {
		var skew time.Duration
		if s.rng.IntN(5) == 0 && !cfg.RightClocks {
			skew = time.Duration(s.rng.IntN(96)-48) * time.Hour
		}
		s.devs = append(s.devs, newDevice(i, skew, s.engineConfig()))
		s.tracef("dev%d skew %v", i, skew)
	}
	return s
}

// finish runs the end-of-run checks (unless err ended the run) and seals
// the digest.
func (s *sim) finish(err error) Result {
	if err != nil {
		s.fail("%v", err)
	} else {
		s.check()
	}
	s.res.Digest = hex.EncodeToString(s.trace.Sum(nil))
	return s.res
}

func (s *sim) tracef(format string, args ...any) {
	line := fmt.Sprintf("%d %s ", s.step, s.now.Format("15:04:05.000")) + fmt.Sprintf(format, args...) + "\n"
	s.trace.Write([]byte(line))
	if s.cfg.Trace != nil {
		io.WriteString(s.cfg.Trace, line)
	}
}

func (s *sim) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.res.Failures = append(s.res.Failures, msg)
	s.tracef("FAIL %s", msg)
}

// schedule runs the seeded operations.
func (s *sim) schedule() error {
	for s.step = 0; s.step < s.cfg.Steps; s.step++ {
		d := s.devs[s.rng.IntN(len(s.devs))]
		var err error
		switch r := s.rng.IntN(108); {
		case r < 26:
			s.edit(d)
		case r < 31:
			s.remove(d)
		case r < 34:
			s.rename(d)
		case r < 46:
			err = s.watchedScan(d)
		case r < 74:
			to := s.devs[s.rng.IntN(len(s.devs))]
			err = s.send(d, to, s.rng.IntN(3) == 0)
		case r < 88:
			err = s.reconcile(d)
		case r < 94:
			dt := time.Duration(s.rng.IntN(15000)) * time.Millisecond
			s.now = s.now.Add(dt)
		case r == 96 && s.cfg.StopAnywhere:
			s.res.Stops++
			err = s.restart(d, false)
		case r < 97:
			d.online = !d.online
			s.tracef("dev%d online=%v", d.idx, d.online)
		case r < 99:
			// The device is killed during its next reconcile, after a
			// decision's files are written and before its index records
			// and resolution are committed (or, with nothing to decide,
			// while idle), and starts again.
			d.crashPending = true
			if err = s.reconcile(d); err == nil && d.crashPending {
				d.crashPending = false
				err = s.restart(d, false)
			}
		case r < 100:
			// The folder index is lost (a damaged vault database keeps
			// its logs).
			err = s.restart(d, true)
		case r < 103:
			err = s.racingSave(d)
		case r < 105:
			s.massDelete(d)
		default:
			err = s.decideSome()
		}
		if err != nil {
			return fmt.Errorf("step %d: %w", s.step, err)
		}
	}
	return nil
}

// names are the file names users write; Config.Paths of them are used.
var names = []string{"a.md", "b.md", "notes/c.md", "d.txt", "e.md", "notes/f.md", "g.md", "h.md"}

// restart is a device starting again after a kill (or, loseIndex, with
// its folder index lost: a damaged vault database keeps its logs). What
// it kept in memory is gone (the paths to reconcile, the history waits);
// it folds every stored entry again, which leaves every path dirty, and
// its open runs a full scan before anything else: files a killed apply
// wrote before its index commit, and every file when the index is lost,
// are met by the scan (a head the disk holds is adopted,
// engine.HeadHolding; other content is recorded as a change). A head the
// disk does not hold (a deletion made before an index loss and not
// scanned, which the rebuilt index cannot know of) is applied again.
//
// The engine's in-memory rules start empty, as node's do: the recent
// applies are forgotten, and the mass-delete guard holds nothing until
// the full scan (engine.ScanFull) judges the deletions it finds again
// (held local ones were never recorded) and the first reconcile the
// deletion heads not applied (held incoming ones).
func (s *sim) restart(d *device, loseIndex bool) error {
	if loseIndex {
		clear(d.index)
	}
	d.eng = engine.New(s.engineConfig())
	for p := range d.disk {
		d.unscanned[p] = true
	}
	d.eng.Step(engine.Touched{Paths: d.graph.Paths()})
	d.eng.Reopened(s.guardIndex(d)) // as node's open: only what the last run left undone
	s.res.Restarts++
	s.tracef("dev%d restart (index lost: %v)", d.idx, loseIndex)
	// The full scan looks at every file on disk and every path the index
	// records (a file gone from the disk is a deletion).
	return s.scanPaths(d, slices.Concat(sortedKeys(d.unscanned), sortedKeys(d.index)), engine.ScanFull)
}

// engineConfig is what each device's engine is made with: the run's
// rules and mass-delete policy, on a case-sensitive disk.
func (s *sim) engineConfig() engine.Config {
	return engine.Config{Rules: s.cfg.Rules, MassDelete: s.cfg.MassDelete}
}

// pickPath picks a path for a user's edit or a rename's target: one of
// the starting names. Users edit no conflict copy (S1's users do not
// either), so a copy of a copy is always a fault; they do delete copies
// and rename files onto other names.
func (s *sim) pickPath() string {
	return names[s.rng.IntN(min(s.cfg.Paths, len(names)))]
}

// rename is a user moving a file on d's disk onto another name (replacing
// what was there), as a deletion and a creation with the same content.
func (s *sim) rename(d *device) {
	onDisk := sortedKeys(d.disk)
	if len(onDisk) == 0 {
		return
	}
	s.userRename(d, onDisk[s.rng.IntN(len(onDisk))], s.pickPath())
}

// userRename moves the file at from on d's disk to to, replacing what was
// there; nothing when from holds nothing or is to.
func (s *sim) userRename(d *device, from, to string) {
	b, ok := d.disk[from]
	if !ok || from == to {
		return
	}
	if old, ok := d.disk[to]; ok {
		s.replaced[hashOf(old)]++
	}
	d.disk[to] = b
	delete(d.disk, from)
	delete(d.deletedBy, to)
	d.unscanned[from], d.unscanned[to] = true, true
	s.tracef("dev%d rename %s -> %s", d.idx, from, to)
}

// edit is a user writing a file: a new file, a changed, inserted or
// appended line, or (sometimes) the file put back to an earlier content.
func (s *sim) edit(d *device) {
	path := s.pickPath()
	s.writes++
	old, exists := d.disk[path]
	var b []byte
	switch {
	case !exists:
		b = fmt.Appendf(nil, "# %s\nw%d first\nw%d second\n", path, s.writes, s.writes)
	case s.rng.IntN(10) == 0 && len(s.userFiles) > 0:
		b = s.content[s.userFiles[s.rng.IntN(len(s.userFiles))].hash] // a restore, maybe of another path's content
	default:
		b = s.editLines(d, old)
	}
	s.userWrite(d, path, b)
}

// editLines is a user's edit of old on d (write number s.writes): a
// changed, inserted or appended line.
func (s *sim) editLines(d *device, old []byte) []byte {
	lines := strings.SplitAfter(string(old), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	i := s.rng.IntN(len(lines) + 1)
	line := fmt.Sprintf("w%d dev%d\n", s.writes, d.idx)
	switch {
	case i == len(lines):
		lines = append(lines, line)
	case s.rng.IntN(2) == 0:
		lines[i] = line
	default:
		lines = append(lines[:i], append([]string{line}, lines[i:]...)...)
	}
	return []byte(strings.Join(lines, ""))
}

// userWrite is a user writing b at path on d's disk: what was there is
// knowingly replaced.
func (s *sim) userWrite(d *device, path string, b []byte) {
	if old, ok := d.disk[path]; ok {
		s.replaced[hashOf(old)]++
	}
	d.disk[path] = b
	d.unscanned[path] = true
	delete(d.deletedBy, path)
	h := hashOf(b)
	s.tracef("dev%d edit %s %x", d.idx, path, h[:4])
}

// remove is a user deleting a file on d's disk.
func (s *sim) remove(d *device) {
	onDisk := sortedKeys(d.disk)
	if len(onDisk) == 0 {
		return
	}
	s.userDelete(d, onDisk[s.rng.IntN(len(onDisk))])
}

// userDelete is a user deleting the file at path on d's disk.
func (s *sim) userDelete(d *device, path string) {
	b, ok := d.disk[path]
	if !ok {
		return
	}
	s.replaced[hashOf(b)]++
	d.deletedBy[path] = hashOf(b)
	delete(d.disk, path)
	d.unscanned[path] = true
	s.tracef("dev%d delete %s", d.idx, path)
}

// send delivers from's entries that to lacks, author by author in log
// order: all of them, or (partial) a random prefix of each author's
// missing run, so versions can arrive before what they supersede.
func (s *sim) send(from, to *device, all bool) error {
	if from == to || !from.online || !to.online {
		return nil
	}
	n := 0
	for _, a := range from.authors() {
		have, avail := len(to.logs[a]), len(from.logs[a])
		if avail <= have {
			continue
		}
		upTo := avail
		if !all {
			upTo = have + 1 + s.rng.IntN(avail-have)
		}
		for _, e := range from.logs[a][have:upTo] {
			if err := s.fold(to, e); err != nil {
				return err
			}
			n++
		}
	}
	if n > 0 {
		s.changed = true
		s.tracef("dev%d -> dev%d %d entries", from.idx, to.idx, n)
	}
	return nil
}

// sendUpTo delivers from's entries of author up to seq upTo that to
// lacks: a partial delivery chosen by a script.
func (s *sim) sendUpTo(from, to, author *device, upTo uint64) error {
	have := uint64(len(to.logs[author.id]))
	avail := min(upTo, uint64(len(from.logs[author.id])))
	n := 0
	for _, e := range from.logs[author.id][min(have, avail):avail] {
		if err := s.fold(to, e); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		s.changed = true
		s.tracef("dev%d -> dev%d %d entries of dev%d", from.idx, to.idx, n, author.idx)
	}
	return nil
}

// heal brings every device online and exchanges and reconciles until a
// round changes nothing, advancing the clock past engine.DanglingWait each
// round so every wait ends.
func (s *sim) heal() error {
	for _, d := range s.devs {
		d.online = true
	}
	if s.cfg.StopAnywhere {
		// Every device receives everything, then stops before applying
		// any of it: nothing arriving later touches those paths again,
		// so what the restart drops is never carried out.
		for _, from := range s.devs {
			for _, to := range s.devs {
				if err := s.send(from, to, true); err != nil {
					return err
				}
			}
		}
		for _, d := range s.devs {
			if err := s.restart(d, false); err != nil {
				return err
			}
		}
	}
	for round := 1; round <= maxHealRounds; round++ {
		s.res.HealRounds = round
		s.changed = false
		for _, d := range s.devs {
			// What changed, and the deletions the watcher deferred
			// (engine.DeleteGuard.Deferred), judged together.
			ps := slices.Concat(sortedKeys(d.unscanned), d.eng.Deletes.Deferred(s.devNow(d)))
			if len(ps) > 0 {
				if err := s.scanPaths(d, ps, engine.ScanSettled); err != nil {
					return err
				}
			}
		}
		for _, from := range s.devs {
			for _, to := range s.devs {
				if err := s.send(from, to, true); err != nil {
					return err
				}
			}
		}
		for _, d := range s.devs {
			if err := s.reconcile(d); err != nil {
				return err
			}
		}
		// The users decide every hold still open: the run ends with no
		// deletion held.
		for _, d := range s.devs {
			if d.eng.Deletes.Holding() {
				if err := s.decide(d, s.rng.IntN(2) == 0); err != nil {
					return err
				}
			}
		}
		pending := false
		for _, d := range s.devs {
			pending = pending || d.eng.HasReady() || len(d.unscanned) > 0 || d.eng.Deletes.Holding() ||
				d.eng.Deletes.Deferred(s.devNow(d).Add(engine.DeletionQuiet)) != nil
		}
		if !s.changed && !pending {
			return nil
		}
		s.now = s.now.Add(engine.DanglingWait + time.Second)
	}
	s.fail("did not settle: still changing after %d exchange rounds", maxHealRounds)
	return nil
}

// sameBytes is bytes.Equal, named for the checks.
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) }

// Summary is a run of many seeds.
type Summary struct {
	First  uint64   `json:"first_seed"`
	Seeds  int      `json:"seeds"`
	Failed []Result `json:"failed,omitempty"`
	// Totals sums the counters of every seed; its Digest is the BLAKE3
	// hash of every seed's digest in seed order (one value that changes
	// when any run does).
	Totals Result `json:"totals"`
	// Digests are the seeds' digests, Digests[i] for seed First+i.
	Digests []string `json:"digests"`
}

// RunSeeds runs seeds first, first+1, ... first+n-1 with cfg's other
// settings (cfg.Trace is ignored: replay one seed to trace it).
func RunSeeds(cfg Config, first uint64, n int) Summary {
	sum := Summary{First: first, Seeds: n}
	cfg.Trace = nil
	for i := range n {
		cfg.Seed = first + uint64(i)
		r := Run(cfg)
		t := &sum.Totals
		t.Steps += r.Steps
		t.Entries += r.Entries
		t.Conflicts += r.Conflicts
		t.Merges += r.Merges
		t.Waits += r.Waits
		t.Adoptions += r.Adoptions
		t.Restarts += r.Restarts
		t.Stops += r.Stops
		t.Holds += r.Holds
		t.Accepts += r.Accepts
		t.Rejects += r.Rejects
		t.RacingSaves += r.RacingSaves
		t.ApplyRaces += r.ApplyRaces
		t.HealRounds += r.HealRounds
		t.Files += r.Files
		if !r.OK() {
			sum.Failed = append(sum.Failed, r)
		}
		sum.Digests = append(sum.Digests, r.Digest)
	}
	all := blake3.New(32, nil)
	for _, d := range sum.Digests {
		all.Write([]byte(d))
	}
	sum.Totals.Digest = hex.EncodeToString(all.Sum(nil))
	return sum
}
