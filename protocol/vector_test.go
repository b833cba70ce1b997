package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/weftsync/weft/protocol/keys"
	"pgregory.net/rapid"
)

func TestVectorCompare(t *testing.T) {
	a, b, c := dev(1), dev(2), dev(3)
	tests := []struct {
		name string
		v, w Vector
		want Ordering
	}{
		{"both empty", Vector{}, nil, Equal},
		{"zeros are absent", Vector{a: 0}, Vector{b: 0}, Equal},
		{"equal", Vector{a: 3, b: 1}, Vector{a: 3, b: 1}, Equal},
		{"before", Vector{a: 2}, Vector{a: 3}, Before},
		{"before: author missing", Vector{a: 3}, Vector{a: 3, b: 1}, Before},
		{"after", Vector{a: 3, b: 1}, Vector{a: 3}, After},
		{"concurrent", Vector{a: 3, b: 1}, Vector{a: 2, c: 1}, Concurrent},
		{"concurrent: same authors", Vector{a: 3, b: 1}, Vector{a: 2, b: 2}, Concurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Compare(tt.w); got != tt.want {
				t.Errorf("Compare: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVectorMissing(t *testing.T) {
	a, b, c := dev(1), dev(2), dev(3)
	tests := []struct {
		name string
		l, r Vector
		want []Range
	}{
		{"equal", Vector{a: 3}, Vector{a: 3}, nil},
		{"peer empty", Vector{b: 2, a: 3}, nil, []Range{{a, 1, 3}, {b, 1, 2}}},
		{"peer behind", Vector{a: 5}, Vector{a: 2}, []Range{{a, 3, 5}}},
		{"peer ahead is not our business", Vector{a: 2}, Vector{a: 5, c: 1}, nil},
		{"mixed", Vector{a: 5, b: 1, c: 4}, Vector{a: 5, b: 3, c: 2}, []Range{{c, 3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.l.Missing(tt.r)); diff != "" {
				t.Errorf("Missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVectorApply(t *testing.T) {
	a := dev(1)
	tests := []struct {
		name    string
		r       Range
		want    uint64
		wantErr bool
	}{
		{"next", Range{a, 4, 6}, 6, false},
		{"overlap", Range{a, 2, 5}, 5, false},
		{"already held", Range{a, 1, 2}, 3, false},
		{"gap", Range{a, 5, 6}, 3, true},
		{"zero from", Range{a, 0, 6}, 3, true},
		{"reversed", Range{a, 5, 4}, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Vector{a: 3}
			err := v.Apply(tt.r)
			if tt.wantErr != (err != nil) || (err != nil && !errors.Is(err, ErrSequenceGap)) {
				t.Errorf("Apply error: got %v, want error %v", err, tt.wantErr)
			}
			if v[a] != tt.want {
				t.Errorf("after Apply: got %d, want %d", v[a], tt.want)
			}
		})
	}
}

func genVector(t *rapid.T, label string) Vector {
	v := Vector{}
	n := rapid.IntRange(0, 5).Draw(t, label+" len")
	for range n {
		a := rapid.ByteRange(1, 6).Draw(t, label+" author")
		v[dev(a)] = rapid.Uint64Range(0, 8).Draw(t, label+" seq")
	}
	return v
}

// TestVectorDiffProperty: applying what L says R lacks makes R hold exactly
// the merge of both, after which L has nothing more to send.
func TestVectorDiffProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l, r := genVector(t, "l"), genVector(t, "r")
		want := r.Clone()
		want.Merge(l)
		got := r.Clone()
		for _, rg := range l.Missing(r) {
			if rg.From < 1 || rg.From > rg.To || rg.From != r[rg.Author]+1 || rg.To != l[rg.Author] {
				t.Fatalf("range %v: not the run (R, L] for its author", rg)
			}
			if err := got.Apply(rg); err != nil {
				t.Fatalf("Apply(%v): %v", rg, err)
			}
		}
		if o := got.Compare(want); o != Equal {
			t.Fatalf("R after applying the diff vs merge(L, R): got %v, want equal", o)
		}
		if o := l.Compare(got); o != Equal && o != Before {
			t.Fatalf("L vs R after the diff: got %v, want equal or before", o)
		}
		if m := l.Missing(got); len(m) != 0 {
			t.Fatalf("L still has to send %v", m)
		}
		// Compare is antisymmetric.
		flip := map[Ordering]Ordering{Equal: Equal, Before: After, After: Before, Concurrent: Concurrent}
		if l.Compare(r) != flip[r.Compare(l)] {
			t.Fatalf("Compare not antisymmetric: %v vs %v", l.Compare(r), r.Compare(l))
		}
		// Both empty diffs mean equal vectors.
		if (len(l.Missing(r)) == 0 && len(r.Missing(l)) == 0) != (l.Compare(r) == Equal) {
			t.Fatalf("empty diffs both ways iff equal: Compare %v", l.Compare(r))
		}
	})
}

func TestVectorHas(t *testing.T) {
	v := Vector{dev(1): 3}
	for _, tt := range []struct {
		a    keys.DeviceID
		seq  uint64
		want bool
	}{{dev(1), 3, true}, {dev(1), 4, false}, {dev(1), 0, false}, {dev(2), 1, false}} {
		if got := v.Has(tt.a, tt.seq); got != tt.want {
			t.Errorf("Has(%v, %d): got %v, want %v", tt.a.Short(), tt.seq, got, tt.want)
		}
	}
}
