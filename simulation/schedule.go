package simulation

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// OpKind names a schedule operation.
type OpKind string

// The operations a schedule is made of.
const (
	OpWrite      OpKind = "write"      // Dev writes Path (Size > 0: binary, chunked)
	OpConcurrent OpKind = "concurrent" // Dev and Dev2 write Path, then both scan
	OpDelete     OpKind = "delete"     // Dev deletes one of its files (Pick)
	OpRename     OpKind = "rename"     // Dev renames one of its files (Pick) to To
	OpPartition  OpKind = "partition"  // cut every link between two sides (Side)
	OpHeal       OpKind = "heal"       // heal every cut
	OpRestart    OpKind = "restart"    // Dev stops (power cut), and starts at the next step
	OpJoin       OpKind = "join"       // a new device pairs with the admin
	OpLeave      OpKind = "leave"      // Dev stops for good, once its entries are held elsewhere
)

// Op is one step of a schedule. Fields not used by Kind are zero.
type Op struct {
	Step int    `json:"step"`
	Kind OpKind `json:"kind"`
	Dev  int    `json:"dev"`
	Dev2 int    `json:"dev2,omitempty"`
	Path string `json:"path,omitempty"`
	To   string `json:"to,omitempty"`
	Pick uint64 `json:"pick,omitempty"`
	Size int    `json:"size,omitempty"`
	Side uint64 `json:"side,omitempty"`
}

func (o Op) String() string {
	switch o.Kind {
	case OpWrite:
		return fmt.Sprintf("%d: d%d write %s (%d B binary)", o.Step, o.Dev, o.Path, o.Size)
	case OpConcurrent:
		return fmt.Sprintf("%d: d%d and d%d write %s concurrently", o.Step, o.Dev, o.Dev2, o.Path)
	case OpDelete:
		return fmt.Sprintf("%d: d%d delete file #%d", o.Step, o.Dev, o.Pick)
	case OpRename:
		return fmt.Sprintf("%d: d%d rename file #%d to %s", o.Step, o.Dev, o.Pick, o.To)
	case OpPartition:
		return fmt.Sprintf("%d: partition %x", o.Step, o.Side)
	case OpRestart, OpLeave:
		return fmt.Sprintf("%d: d%d %s", o.Step, o.Dev, o.Kind)
	}
	return fmt.Sprintf("%d: %s", o.Step, o.Kind)
}

// Probs are the relative weights of the operations (they need not sum to
// one). Write covers creates and edits: the path is drawn from a small
// pool, so a write often replaces an existing file.
type Probs struct {
	Write, Concurrent, Delete, Rename, Partition, Heal, Restart, Join, Leave float64
}

// DefaultProbs is S1's mix.
var DefaultProbs = Probs{Write: 50, Concurrent: 10, Delete: 10, Rename: 8, Partition: 4, Heal: 4, Restart: 4}

// ChurnProbs is S4's: S1's plus joins and leaves.
var ChurnProbs = Probs{Write: 50, Concurrent: 10, Delete: 10, Rename: 8, Partition: 4, Heal: 4, Restart: 6, Join: 4, Leave: 3}

// pathPool is what writes and renames draw names from.
var pathPool = func() []string {
	var out []string
	for _, dir := range []string{"", "docs/", "docs/old/"} {
		for i := range 6 {
			out = append(out, fmt.Sprintf("%sf%d.txt", dir, i))
		}
	}
	return out
}()

// Generate returns the schedule of steps operations for devices devices
// (more may join) from seed: a pure function of its arguments, using
// math/rand/v2's PCG. Device 0 (the vault's admin) never leaves or
// restarts, so joins always have an inviter.
func Generate(seed uint64, devices, steps int, p Probs) []Op {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	weights := []float64{p.Write, p.Concurrent, p.Delete, p.Rename, p.Partition, p.Heal, p.Restart, p.Join, p.Leave}
	kinds := []OpKind{OpWrite, OpConcurrent, OpDelete, OpRename, OpPartition, OpHeal, OpRestart, OpJoin, OpLeave}
	var total float64
	for _, w := range weights {
		total += w
	}
	n := devices
	left := map[int]bool{}
	live := devices
	pickDev := func(notAdmin bool) int {
		for {
			d := rng.IntN(n)
			if left[d] || (notAdmin && d == 0) {
				continue
			}
			return d
		}
	}
	ops := make([]Op, 0, steps)
	for step := range steps {
		x := rng.Float64() * total
		k := OpWrite
		for i, w := range weights {
			if x < w {
				k = kinds[i]
				break
			}
			x -= w
		}
		op := Op{Step: step, Kind: k}
		switch k {
		case OpWrite:
			op.Dev = pickDev(false)
			op.Path = pathPool[rng.IntN(len(pathPool))]
			if rng.IntN(5) == 0 {
				op.Size = 4096 + rng.IntN(60<<10) // over the inline limit: chunked
			}
		case OpConcurrent:
			if live < 2 {
				op.Kind, op.Dev, op.Path = OpWrite, pickDev(false), pathPool[rng.IntN(len(pathPool))]
				break
			}
			op.Dev = pickDev(false)
			for op.Dev2 = pickDev(false); op.Dev2 == op.Dev; op.Dev2 = pickDev(false) {
			}
			op.Path = pathPool[rng.IntN(len(pathPool))]
		case OpDelete:
			op.Dev, op.Pick = pickDev(false), rng.Uint64()
		case OpRename:
			op.Dev, op.Pick = pickDev(false), rng.Uint64()
			op.To = pathPool[rng.IntN(len(pathPool))]
		case OpPartition:
			op.Side = rng.Uint64() | 1
		case OpRestart:
			if live < 2 {
				op.Kind = OpHeal
				break
			}
			op.Dev = pickDev(true)
		case OpJoin:
			n++
			live++
		case OpLeave:
			if live <= 3 {
				op.Kind = OpHeal
				break
			}
			op.Dev = pickDev(true)
			left[op.Dev] = true
			live--
		}
		ops = append(ops, op)
	}
	return ops
}

// side says which side of partition op.Side device i is on.
func side(mask uint64, i int) bool {
	x := mask ^ uint64(i)*0x9e3779b97f4a7c15
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 32
	return x&1 == 1
}

// Content is the deterministic content of write sub (0 or 1) of a step:
// a header line naming the write, then either one random text line or,
// when size > 0, size random bytes (binary, so never merged). Every write's
// content is unique, so the final tree tells which writes survive.
func Content(seed uint64, step, sub, dev, size int) []byte {
	rng := rand.New(rand.NewPCG(seed^uint64(step)<<20^uint64(sub), 0xc0ffee))
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d.%d d%d\n", headerPrefix, step, sub, dev)
	if size == 0 {
		fmt.Fprintf(&b, "%016x %016x\n", rng.Uint64(), rng.Uint64())
		return []byte(b.String())
	}
	out := []byte(b.String())
	for len(out) < size {
		out = append(out, byte(rng.Uint32()))
	}
	return out
}

const headerPrefix = "weft-sim w"

// parseHeader returns the write key "step.sub" of content written by
// Content, or "".
func parseHeader(head []byte) string {
	s := string(head)
	if !strings.HasPrefix(s, headerPrefix) {
		return ""
	}
	s = s[len(headerPrefix):]
	if i := strings.IndexByte(s, ' '); i > 0 {
		return s[:i]
	}
	return ""
}
