package engine

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol"
)

// guardFolder is a folder index for the guard: path -> what it holds.
type guardFolder struct {
	disk      map[string]Disk
	confirmed map[string]bool // every head a confirmed deletion
	winnerDel map[string]bool // the decided winner is a deletion
}

func newGuardFolder(files int) *guardFolder {
	f := &guardFolder{disk: map[string]Disk{}, confirmed: map[string]bool{}, winnerDel: map[string]bool{}}
	for i := range files {
		f.disk[name(i)] = Disk{Kind: protocol.KindFile, ContentHash: hashOf(i)}
	}
	return f
}

func name(i int) string                                { return fmt.Sprintf("n%03d.md", i) }
func hashOf(i int) [32]byte                            { return [32]byte{byte(i), byte(i >> 8), 1} }
func (f *guardFolder) Lookup(p string) (Disk, bool)    { d, ok := f.disk[p]; return d, ok }
func (f *guardFolder) DeletionConfirmed(p string) bool { return f.confirmed[p] }
func (f *guardFolder) WinnerIsDeletion(p string) bool  { return f.winnerDel[p] }
func (f *guardFolder) Files() int {
	n := 0
	for _, d := range f.disk {
		if countsAsFile(d.Kind) {
			n++
		}
	}
	return n
}

// deleted are scan changes deleting files lo..hi-1 (still in the index:
// a held deletion keeps its record).
func deleted(lo, hi int) []LocalChange {
	var out []LocalChange
	for i := lo; i < hi; i++ {
		out = append(out, LocalChange{Path: name(i), Deleted: true, Kind: protocol.KindFile, Hash: hashOf(i)})
	}
	return out
}

func paths(lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, name(i))
	}
	return out
}

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func TestGuardLocalBelowAndAbovePolicy(t *testing.T) {
	f := newGuardFolder(100)
	var g DeleteGuard
	v := g.JudgeLocal(deleted(0, 10), ScanSettled, paths(0, 10), f, t0)
	if len(v.Withheld) != 0 || v.Began {
		t.Fatalf("10 of 100 files: withheld %d, began %v; want them recorded", len(v.Withheld), v.Began)
	}
	for _, p := range paths(0, 10) {
		delete(f.disk, p) // recorded: gone from the index
	}
	// 45 more within the window: 55 of 100 counts as one mass deletion.
	v = g.JudgeLocal(deleted(10, 55), ScanSettled, paths(10, 55), f, t0.Add(time.Second))
	if !v.Began || len(v.Withheld) != 45 || v.HeldFiles != 45 || v.IndexFiles != 90 || len(v.Sample) != 5 {
		t.Fatalf("55 of 100 within the window: %+v; want a hold of the 45 new ones", v)
	}
	// Once a hold exists, one more deletion joins it, however small.
	v = g.JudgeLocal(deleted(60, 61), ScanSettled, paths(60, 61), f, t0.Add(time.Hour))
	if v.Began || !slices.Equal(v.Withheld, paths(60, 61)) {
		t.Fatalf("one more deletion during a hold: %+v; want it joined to the hold", v)
	}
	if h := g.HeldLocal(); len(h.Paths) != 46 || h.Files != 46 || !h.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("held %d paths (%d files) since %v", len(h.Paths), h.Files, h.Since)
	}
}

func TestGuardLocalWindowExpires(t *testing.T) {
	f := newGuardFolder(100)
	var g DeleteGuard
	g.JudgeLocal(deleted(0, 30), ScanSettled, nil, f, t0)
	v := g.JudgeLocal(deleted(30, 60), ScanSettled, nil, f, t0.Add(DeleteWindow))
	if len(v.Withheld) != 0 {
		t.Fatalf("30 + 30 of 100, a window apart: %d withheld; want both recorded", len(v.Withheld))
	}
}

func TestGuardLocalMoveIsNotALoss(t *testing.T) {
	f := newGuardFolder(100)
	var g DeleteGuard
	// 80 files moved into a directory: deletions and additions of the
	// same content, in one scan.
	var cs []LocalChange
	for i := range 80 {
		cs = append(cs, LocalChange{Path: "moved/" + name(i), Kind: protocol.KindFile, Hash: hashOf(i)})
	}
	cs = append(cs, deleted(0, 80)...)
	if v := g.JudgeLocal(cs, ScanFull, nil, f, t0); len(v.Withheld) != 0 {
		t.Fatalf("a move of 80 files: %d withheld", len(v.Withheld))
	}
	// The other half of a move reported a scan later still counts as a
	// move within the window.
	g = DeleteGuard{}
	var adds []LocalChange
	for i := range 80 {
		adds = append(adds, LocalChange{Path: "moved/" + name(i), Kind: protocol.KindFile, Hash: hashOf(i)})
	}
	g.JudgeLocal(adds, ScanSettled, nil, f, t0)
	if v := g.JudgeLocal(deleted(0, 80), ScanSettled, nil, f, t0.Add(time.Second)); len(v.Withheld) != 0 {
		t.Fatalf("the deletion half of a move a scan later: %d withheld", len(v.Withheld))
	}
}

func TestGuardWatchedDeletionsAreJudgedWhole(t *testing.T) {
	f := newGuardFolder(100)
	var g DeleteGuard
	// The watcher reports an rm -rf in three batches: each is deferred.
	for i, lo := range []int{0, 20, 40} {
		v := g.JudgeLocal(deleted(lo, lo+20), ScanWatched, nil, f, t0.Add(time.Duration(i)*100*time.Millisecond))
		if len(v.Withheld) != 20 || v.Began {
			t.Fatalf("watched batch %d: %+v; want it deferred", i, v)
		}
	}
	if ps := g.Deferred(t0.Add(300 * time.Millisecond)); ps != nil {
		t.Fatalf("deferred while deletions still arrive: %d paths; want none yet", len(ps))
	}
	ps := g.Deferred(t0.Add(200*time.Millisecond + DeletionQuiet))
	if !slices.Equal(ps, paths(0, 60)) {
		t.Fatalf("deferred after the quiet time: %d paths; want the 60, sorted", len(ps))
	}
	// The settled scan of them judges all 60 of 100 together: held.
	v := g.JudgeLocal(deleted(0, 60), ScanSettled, ps, f, t0.Add(2*time.Second))
	if !v.Began || len(v.Withheld) != 60 || v.HeldFiles != 60 {
		t.Fatalf("settled scan of 60 deferred deletions: %+v; want all held", v)
	}
	if g.Deferred(t0.Add(time.Hour)) != nil {
		t.Fatal("deferred deletions left after they were judged")
	}
}

func TestGuardFilesBackEndTheHold(t *testing.T) {
	f := newGuardFolder(100)
	var g DeleteGuard
	g.JudgeLocal(deleted(0, 60), ScanFull, nil, f, t0)
	var back []LocalChange
	for i := range 60 {
		back = append(back, LocalChange{Path: name(i), Kind: protocol.KindFile, Hash: hashOf(i)})
	}
	v := g.JudgeLocal(back, ScanSettled, paths(0, 60), f, t0.Add(time.Minute))
	if !v.Ended || g.Holding() {
		t.Fatalf("every held file back: %+v, holding %v; want the hold ended", v, g.Holding())
	}
}

func TestGuardAcceptConfirmsLocalAndIncoming(t *testing.T) {
	f := newGuardFolder(100)
	g := DeleteGuard{Policy: protocol.MassDeletePolicy{Percent: 30}}
	g.JudgeLocal(deleted(0, 60), ScanFull, nil, f, t0)
	for i := 60; i < 100; i++ {
		f.winnerDel[name(i)] = true
	}
	g.JudgeIncoming(paths(60, 100), nil, f, t0)
	local, incoming := g.Accept()
	if !slices.Equal(local, paths(0, 60)) || !slices.Equal(incoming, paths(60, 100)) || g.Holding() {
		t.Fatalf("accept: local %d, incoming %d, holding %v", len(local), len(incoming), g.Holding())
	}
	v := g.JudgeLocal(deleted(0, 60), ScanSettled, local, f, t0.Add(time.Minute))
	if len(v.Withheld) != 0 || len(v.Confirmed) != 60 {
		t.Fatalf("the scan after an accept: %d withheld, %d confirmed; want all recorded as confirmed", len(v.Withheld), len(v.Confirmed))
	}
	in := g.JudgeIncoming(paths(60, 100), nil, f, t0.Add(time.Minute))
	if !slices.Equal(in.Apply, paths(60, 100)) {
		t.Fatalf("the reconcile after an accept applies %d of 40", len(in.Apply))
	}
}

func TestGuardIncoming(t *testing.T) {
	f := newGuardFolder(100)
	var g DeleteGuard
	v := g.JudgeIncoming(paths(0, 60), nil, f, t0)
	if !v.Began || len(v.Apply) != 0 || v.NewlyHeld != 60 || v.HeldFiles != 60 {
		t.Fatalf("60 of 100 deleted by a peer: %+v; want all held", v)
	}
	// The content arrives at new paths: the held deletions were a move
	// and are released.
	arriving := map[[32]byte]string{}
	for i := range 60 {
		arriving[hashOf(i)] = "moved/" + name(i)
	}
	v = g.JudgeIncoming(nil, arriving, f, t0.Add(time.Second))
	if !slices.Equal(v.Apply, paths(0, 60)) || g.Holding() {
		t.Fatalf("the other half of the move: apply %d, holding %v; want the 60 released", len(v.Apply), g.Holding())
	}
	// Confirmed deletions and paths not here count for nothing.
	g = DeleteGuard{}
	for i := range 60 {
		f.confirmed[name(i)] = true
	}
	if v := g.JudgeIncoming(append(paths(0, 60), "not-here"), nil, f, t0); len(v.Apply) != 61 || g.Holding() {
		t.Fatalf("confirmed deletions: %+v; want every one applied", v)
	}
}

func TestGuardReleaseWhenTheDeletionLoses(t *testing.T) {
	f := newGuardFolder(100)
	for i := range 60 {
		f.winnerDel[name(i)] = true
	}
	var g DeleteGuard
	g.JudgeIncoming(paths(0, 60), nil, f, t0)
	// A newer version wins at ten of the paths.
	for i := range 10 {
		f.winnerDel[name(i)] = false
	}
	g.Release(paths(0, 60), f)
	if h := g.HeldIncoming(); len(h.Paths) != 50 || h.Files != 50 {
		t.Fatalf("after ten deletions lost: %d held (%d files); want 50", len(h.Paths), h.Files)
	}
	g.DropIncoming(paths(10, 60), f)
	if g.Holding() {
		t.Fatal("still holding after every held path was dropped")
	}
}

func TestGuardPolicyOff(t *testing.T) {
	f := newGuardFolder(100)
	g := DeleteGuard{Policy: protocol.MassDeletePolicy{Off: true}}
	if v := g.JudgeLocal(deleted(0, 100), ScanFull, nil, f, t0); len(v.Withheld) != 0 {
		t.Fatalf("policy off: %d withheld", len(v.Withheld))
	}
	if v := g.JudgeIncoming(paths(0, 100), nil, f, t0); len(v.Apply) != 100 {
		t.Fatalf("policy off: %d of 100 applied", len(v.Apply))
	}
}

// TestGuardArrivingPastTheCap: a pass with more arriving contents than the
// guard remembers keeps the smallest hashes, not whichever map order gives
// first, so every device (and every replay of a simulated one) recognises
// the same moves.
func TestGuardArrivingPastTheCap(t *testing.T) {
	arriving := map[[32]byte]string{}
	var all [][32]byte
	for i := range maxMoveHashes + 50 {
		h := [32]byte{byte(i), byte(i >> 8), byte(i >> 16), 2}
		arriving[h] = fmt.Sprintf("moved/%d", i)
		all = append(all, h)
	}
	slices.SortFunc(all, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	var g DeleteGuard
	g.JudgeIncoming(nil, arriving, newGuardFolder(0), t0)
	if len(g.arrived) != maxMoveHashes {
		t.Fatalf("remembered %d arriving contents, want the cap %d", len(g.arrived), maxMoveHashes)
	}
	for i, h := range all {
		if _, kept := g.arrived[h]; kept != (i < maxMoveHashes) {
			t.Fatalf("hash %d of %d in sorted order: kept %v, want %v", i, len(all), kept, i < maxMoveHashes)
		}
	}
}
