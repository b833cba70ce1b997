package simulation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// Result is what a run measured and found. Failures is empty when every
// check passed.
type Result struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	Devices  int    `json:"devices"`
	Steps    int    `json:"steps"`
	Until    int    `json:"until,omitempty"`

	Ops     map[OpKind]int `json:"ops,omitempty"`
	Skipped int            `json:"skipped_ops"`

	Writes int `json:"writes"`
	Acked  int `json:"acked_writes"`
	// Superseded acknowledged writes a later user operation replaced or
	// deleted after seeing them.
	Superseded int `json:"superseded"`
	// Lost acknowledged writes neither present nor superseded.
	Lost []string `json:"lost,omitempty"`
	// Observations expected: each acknowledged write held in the vault
	// log of every other present device.
	ObservationsExpected int `json:"observations_expected"`
	ObservationsMissing  int `json:"observations_missing"`
	// BadContent counts files whose bytes do not hash to what the write
	// that named them wrote.
	BadContent    int `json:"bad_content"`
	ConflictFiles int `json:"conflict_files"`
	// TempFiles counts applier temporary files left in the final trees
	// (every present device's); any is a failure.
	TempFiles  int `json:"temp_files"`
	FinalFiles int `json:"final_files"`

	Converged       bool    `json:"converged"`
	ConvergeSeconds float64 `json:"converge_seconds"`
	SetupSeconds    float64 `json:"setup_seconds"`
	WallSeconds     float64 `json:"wall_seconds"`

	// Latency of write-to-observe in milliseconds, from the sampler
	// (resolution: its period).
	LatenciesMs []float64 `json:"-"`
	P50Ms       float64   `json:"p50_ms"`
	P95Ms       float64   `json:"p95_ms"`
	P99Ms       float64   `json:"p99_ms"`
	MaxMs       float64   `json:"max_ms"`
	Convergence []Point   `json:"convergence,omitempty"`

	BytesSent     int64    `json:"bytes_sent"`
	MsgsSent      int64    `json:"messages_sent"`
	BytesChanged  int64    `json:"bytes_changed"`
	BytesPerByte  float64  `json:"bytes_per_byte_changed"`
	MsgsPerNode   float64  `json:"messages_per_node"`
	MemPerNode    float64  `json:"mem_per_node_bytes"`
	DirectPairs   int      `json:"direct_pairs,omitempty"`
	PossiblePairs int      `json:"possible_pairs,omitempty"`
	Failures      []string `json:"failures,omitempty"`
}

// OK reports whether every check passed.
func (r *Result) OK() bool { return len(r.Failures) == 0 }

// nodeTraffic sums a node's payload bytes and messages sent to every peer.
func nodeTraffic(n *node.Node) counters {
	var c counters
	for _, p := range n.Status().Peers {
		c.bytes += p.BytesSent
		c.msgs += p.MsgsSent
	}
	return c
}

func unsafeCount(n *node.Node) uint64 {
	var u uint64
	for _, f := range n.Status().Folders {
		u += f.Unsafe
	}
	return u
}

// saveTraffic keeps a stopping node's counters, which die with it.
func (r *runner) saveTraffic(d *Device) {
	n := d.Node()
	if n == nil {
		return
	}
	t := nodeTraffic(n)
	r.mu.Lock()
	o := r.bytesOld[d.Index]
	r.bytesOld[d.Index] = counters{o.bytes + t.bytes, o.msgs + t.msgs}
	r.mu.Unlock()
}

// collectTraffic totals traffic and latencies into res.
func (r *runner) collectTraffic(res *Result) {
	devs := r.devices()
	res.Devices = len(devs)
	for _, d := range devs {
		r.mu.Lock()
		o := r.bytesOld[d.Index]
		r.mu.Unlock()
		res.BytesSent += o.bytes
		res.MsgsSent += o.msgs
		if n := d.Node(); n != nil {
			t := nodeTraffic(n)
			res.BytesSent += t.bytes
			res.MsgsSent += t.msgs
		}
	}
	res.MsgsPerNode = float64(res.MsgsSent) / float64(len(devs))
	for _, a := range devs {
		for _, b := range devs[a.Index+1:] {
			if a.Left() || b.Left() {
				continue
			}
			res.PossiblePairs++
			if r.c.Net.Connected(a.Peer, b.Peer) {
				res.DirectPairs++
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Ops = r.ops
	res.Skipped = r.skipped
	for _, w := range r.writes {
		if !w.Acked {
			continue
		}
		for dev, t := range r.firstSeen[w.Key] {
			if dev != w.Dev {
				res.LatenciesMs = append(res.LatenciesMs, max(0, float64(t.Sub(w.AckedAt).Microseconds())/1000))
			}
		}
	}
	setPercentiles(res)
	res.Convergence = r.curve
}

func setPercentiles(res *Result) {
	ls := slices.Clone(res.LatenciesMs)
	slices.Sort(ls)
	res.LatenciesMs = ls
	if len(ls) == 0 {
		return
	}
	q := func(f float64) float64 { return ls[min(len(ls)-1, int(f*float64(len(ls))))] }
	res.P50Ms, res.P95Ms, res.P99Ms, res.MaxMs = q(0.50), q(0.95), q(0.99), ls[len(ls)-1]
}

// check runs the end-of-run checks on the settled cluster and fills res.
// It stops every node (the vault logs are read from disk).
//
//   - Every present device's tree is identical (settle already waited for
//     it; a difference left is a failure).
//   - Every acknowledged write is present (its exact content is a file of
//     the final tree, at any path: renames and conflict copies count) or
//     superseded (the user later replaced, deleted or renamed over a file
//     holding that content, on a device where it was visible).
//   - Observations: every acknowledged write, identified by author, path
//     and content hash, is a version in the vault log of every other
//     present device; the count of missing ones is reported.
//   - Every file whose content names a write hashes to that write's hash.
//   - No applier temporary file (.weft-tmp-) is left on any device.
//   - Conflict copies: no path holds conflictMark twice (a copy of a copy)
//     and no content is in two conflict copies (copyProblems).
func (r *runner) check(res *Result) {
	devs := r.devices()
	var present []*Device
	for _, d := range devs {
		if !d.Left() {
			present = append(present, d)
		}
	}
	if same, desc := r.identical(); !same {
		res.Failures = append(res.Failures, fmt.Sprintf("seed %d step %d: trees differ: %s", r.cfg.Seed, res.Steps, desc))
	}
	// Content of the final tree (of the first present device; the others
	// are identical or already reported) and per-file integrity.
	final := map[[32]byte]bool{}
	for i, d := range present {
		t, err := Tree(d.FS)
		if err != nil {
			res.Failures = append(res.Failures, err.Error())
			continue
		}
		if temps := tempFiles(t); len(temps) > 0 {
			res.TempFiles += len(temps)
			res.Failures = append(res.Failures, fmt.Sprintf("seed %d: d%d has applier temp files left in its folder: %s", r.cfg.Seed, d.Index, strings.Join(temps, ", ")))
		}
		if i == 0 {
			for _, msg := range copyProblems(t) {
				res.Failures = append(res.Failures, fmt.Sprintf("seed %d: d%d: %s", r.cfg.Seed, d.Index, msg))
			}
		}
		for p, it := range t {
			if it.Dir {
				continue
			}
			if i == 0 {
				final[it.Hash] = true
				res.FinalFiles++
				if strings.Contains(p, ".conflict-") {
					res.ConflictFiles++
				}
			}
			k := parseHeader(readHead(d.FS, p, 64))
			r.mu.Lock()
			w := r.byKey[k]
			r.mu.Unlock()
			if k != "" && (w == nil || w.Hash != it.Hash) {
				res.BadContent++
				res.Failures = append(res.Failures, fmt.Sprintf("seed %d: d%d holds %s whose bytes do not hash to write %s's content", r.cfg.Seed, d.Index, p, k))
			}
		}
	}
	r.mu.Lock()
	writes := slices.Clone(r.writes)
	r.mu.Unlock()
	res.Writes = len(writes)
	for _, w := range writes {
		if !w.Acked {
			continue
		}
		res.Acked++
		switch {
		case final[w.Hash]:
		case w.Superseded:
			res.Superseded++
		default:
			msg := fmt.Sprintf("seed %d step %d: write %s by d%d at %s lost (not in the final tree, not superseded by a user operation)", r.cfg.Seed, w.Step, w.Key, w.Dev, w.Path)
			res.Lost = append(res.Lost, msg)
			res.Failures = append(res.Failures, msg)
		}
	}
	// Observations, from each present device's vault log on disk.
	for _, d := range devs {
		_ = r.c.Stop(d, false)
	}
	type verKey struct {
		author keys.DeviceID
		path   string
		hash   [32]byte
	}
	ek := r.c.Root.Epoch0().Keys(0)
	ids := map[int]keys.DeviceID{}
	for _, d := range devs {
		ids[d.Index] = d.ID
	}
	missingByWrite := map[string]int{}
	for _, d := range present {
		held := map[verKey]bool{}
		db, _, err := vaultdb.Open(d.hv.DBDir(), r.c.Vault)
		if err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("opening d%d's vault log: %v", d.Index, err))
			continue
		}
		for author, head := range db.Heads() {
			_ = db.Range(author, 1, head.Seq, func(e *entry.Entry) error {
				body, err := entry.OpenBody(e, ek)
				if err != nil {
					return err
				}
				for _, v := range body.Versions {
					if v.Kind == entry.KindFile {
						held[verKey{author, v.Path, v.Hash}] = true
					}
				}
				return nil
			})
		}
		db.Close()
		for _, w := range writes {
			if !w.Acked {
				continue
			}
			k := verKey{ids[w.Dev], w.Path, w.Hash}
			if d.Index == w.Dev {
				if !held[k] {
					msg := fmt.Sprintf("seed %d step %d: write %s was acknowledged on d%d but is not in its own log", r.cfg.Seed, w.Step, w.Key, w.Dev)
					res.Failures = append(res.Failures, msg)
				}
				continue
			}
			res.ObservationsExpected++
			if !held[k] {
				res.ObservationsMissing++
				missingByWrite[fmt.Sprintf("%s@d%d", w.Key, w.Dev)]++
			}
		}
	}
	if res.ObservationsMissing > 0 {
		var ks []string
		for k, n := range missingByWrite {
			ks = append(ks, fmt.Sprintf("%s(%d)", k, n))
		}
		slices.Sort(ks)
		if len(ks) > 8 {
			ks = append(ks[:8], "...")
		}
		res.Failures = append(res.Failures, fmt.Sprintf("seed %d: %d of %d observations missing; writes: %s", r.cfg.Seed, res.ObservationsMissing, res.ObservationsExpected, strings.Join(ks, " ")))
	}
	for _, w := range writes {
		if w.Acked {
			res.BytesChanged += int64(w.Size)
		}
	}
	if res.BytesChanged > 0 && len(present) > 1 {
		res.BytesPerByte = float64(res.BytesSent) / float64(res.BytesChanged*int64(len(present)-1))
	}
}
