package relay

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// planNow is the clock of the plan tests: noon UTC, so that "ago" values
// of whole days land mid-day and hours move within a day.
var planNow = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

const oneDay = 24 * time.Hour

// planAdd is one stored version in a plan test: name, how long before
// planNow its entry was written, whether its entry is held, and the names
// of the versions it supersedes.
type planAdd struct {
	v      string
	ago    time.Duration
	unheld bool
	sup    []string
}

// vid names a test version: author byte from the name's first letter, seq
// from the position, so that names map to distinct stable IDs.
func planVID(name string) entry.VersionID {
	var a keys.DeviceID
	a[0] = name[0]
	var seq uint64 = 1
	for _, c := range name[1:] {
		seq = seq*31 + uint64(c)
	}
	return entry.VersionID{Author: a, Seq: seq}
}

func runPlan(pol Retention, adds []planAdd) (*plan, planStats) {
	p := newPlan(pol, planNow)
	for i, a := range adds {
		sup := make([]entry.VersionID, len(a.sup))
		for j, s := range a.sup {
			sup[j] = planVID(s)
		}
		p.add(planVID(a.v), planNow.Add(-a.ago).UnixMilli(), uint64(i+1), !a.unheld, sup)
	}
	return p, p.finish()
}

func TestPlanRetained(t *testing.T) {
	tests := []struct {
		name string
		pol  Retention
		adds []planAdd
		want []string // stored versions retained; every other stored one expires
	}{
		{
			name: "a head is kept however old",
			adds: []planAdd{{v: "a1", ago: 5000 * oneDay}},
			want: []string{"a1"},
		},
		{
			name: "superseded a day ago: kept by KeepAll",
			adds: []planAdd{{v: "a1", ago: 2 * oneDay}, {v: "a2", ago: oneDay, sup: []string{"a1"}}},
			want: []string{"a1", "a2"},
		},
		{
			name: "superseded 40 days ago, alone on its day: kept daily",
			adds: []planAdd{{v: "a1", ago: 41 * oneDay}, {v: "a2", ago: 40 * oneDay, sup: []string{"a1"}}},
			want: []string{"a1", "a2"},
		},
		{
			name: "two superseded on one day 40 days ago: the newer is kept",
			adds: []planAdd{
				{v: "a1", ago: 41 * oneDay},
				{v: "a2", ago: 40 * oneDay, sup: []string{"a1"}},
				{v: "a3", ago: 40*oneDay - time.Hour, sup: []string{"a2"}},
			},
			want: []string{"a2", "a3"},
		},
		{
			name: "superseded on two days 40 days ago: one kept per day",
			adds: []planAdd{
				{v: "a1", ago: 42 * oneDay},
				{v: "a2", ago: 41 * oneDay, sup: []string{"a1"}},
				{v: "a3", ago: 40 * oneDay, sup: []string{"a2"}},
			},
			want: []string{"a1", "a2", "a3"},
		},
		{
			name: "UTC day boundary: 23:59 and 00:01 fall on two days",
			adds: []planAdd{
				{v: "a1", ago: 45 * oneDay},
				{v: "a2", ago: 40*oneDay + 12*time.Hour + time.Minute, sup: []string{"a1"}}, // 23:59
				{v: "a3", ago: 40*oneDay + 12*time.Hour - time.Minute, sup: []string{"a2"}}, // 00:01
			},
			want: []string{"a1", "a2", "a3"},
		},
		{
			name: "superseded more than a year ago: expired",
			adds: []planAdd{{v: "a1", ago: 401 * oneDay}, {v: "a2", ago: 400 * oneDay, sup: []string{"a1"}}},
			want: []string{"a2"},
		},
		{
			name: "two lineages on one day: one kept in each",
			adds: []planAdd{
				{v: "a1", ago: 41 * oneDay}, {v: "a2", ago: 40 * oneDay, sup: []string{"a1"}}, {v: "a3", ago: 40*oneDay - time.Hour, sup: []string{"a2"}},
				{v: "b1", ago: 41 * oneDay}, {v: "b2", ago: 40 * oneDay, sup: []string{"b1"}}, {v: "b3", ago: 40*oneDay - time.Hour, sup: []string{"b2"}},
			},
			want: []string{"a2", "a3", "b2", "b3"},
		},
		{
			name: "superseded only by an entry not held: still a head",
			adds: []planAdd{{v: "a1", ago: 900 * oneDay}, {v: "a2", ago: 800 * oneDay, unheld: true, sup: []string{"a1"}}},
			want: []string{"a1", "a2"},
		},
		{
			name: "superseded in the author's future: kept",
			adds: []planAdd{{v: "a1", ago: 900 * oneDay}, {v: "a2", ago: -100 * oneDay, sup: []string{"a1"}}},
			want: []string{"a1", "a2"},
		},
		{
			name: "concurrent superseders: the latest time counts",
			adds: []planAdd{
				{v: "a1", ago: 900 * oneDay},
				{v: "b1", ago: 800 * oneDay, sup: []string{"a1"}},
				{v: "c1", ago: oneDay, sup: []string{"a1"}},
			},
			want: []string{"a1", "b1", "c1"},
		},
		{
			name: "a merge joins the lineages it supersedes",
			adds: []planAdd{
				{v: "a1", ago: 50 * oneDay},
				{v: "b1", ago: 50 * oneDay, sup: []string{"a1"}},
				{v: "c1", ago: 50 * oneDay, sup: []string{"a1"}},
				{v: "a2", ago: 40 * oneDay, sup: []string{"b1", "c1"}}, // b1, c1: same oneDay, same lineage
			},
			want: []string{"a1", "a2", "c1"}, // c1 wins day 40's tie on clock; a1 is day 50's
		},
		{
			name: "a deletion is a head; what it deleted expires like any version",
			adds: []planAdd{{v: "a1", ago: 500 * oneDay}, {v: "b1", ago: 400 * oneDay, sup: []string{"a1"}}},
			want: []string{"b1"},
		},
		{
			name: "a version of an unheld entry is kept even when superseded",
			adds: []planAdd{{v: "a1", ago: 500 * oneDay, unheld: true}, {v: "b1", ago: 400 * oneDay, sup: []string{"a1"}}},
			want: []string{"a1", "b1"},
		},
		{
			name: "heads only",
			pol:  Retention{KeepAll: -1, Daily: -1},
			adds: []planAdd{{v: "a1", ago: 2 * oneDay}, {v: "a2", ago: -oneDay, sup: []string{"a1"}}},
			want: []string{"a2"},
		},
		{
			name: "KeepAll only",
			pol:  Retention{KeepAll: 10 * oneDay},
			adds: []planAdd{{v: "a1", ago: 12 * oneDay}, {v: "a2", ago: 11 * oneDay, sup: []string{"a1"}}, {v: "a3", ago: 9 * oneDay, sup: []string{"a2"}}},
			want: []string{"a2", "a3"},
		},
		{
			name: "superseded versions nobody stored are not counted",
			adds: []planAdd{{v: "a2", ago: 400 * oneDay, sup: []string{"a1"}}},
			want: []string{"a2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, st := runPlan(tt.pol, tt.adds)
			var got []string
			for _, a := range tt.adds {
				if p.retained(planVID(a.v)) {
					got = append(got, a.v)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("retained: got %v, want %v", got, tt.want)
			}
			if st.Versions != len(tt.adds) || st.Versions-st.Expired != len(tt.want) {
				t.Errorf("stats %+v: got %d versions, %d kept; want %d, %d", st, st.Versions, st.Versions-st.Expired, len(tt.adds), len(tt.want))
			}
		})
	}
}

func TestRetentionNormalized(t *testing.T) {
	tests := []struct {
		in, want Retention
	}{
		{Retention{}, DefaultRetention},
		{Retention{KeepAll: -1, Daily: -1}, Retention{}},
		{Retention{KeepAll: time.Hour}, Retention{KeepAll: time.Hour}},
		{Retention{KeepAll: -1, Daily: oneDay}, Retention{Daily: oneDay}},
	}
	for _, tt := range tests {
		if got := tt.in.normalized(); got != tt.want {
			t.Errorf("%+v.normalized(): got %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestFloorDiv(t *testing.T) {
	tests := []struct{ a, b, want int64 }{
		{0, 10, 0}, {9, 10, 0}, {10, 10, 1}, {-1, 10, -1}, {-10, 10, -1}, {-11, 10, -2},
	}
	for _, tt := range tests {
		if got := floorDiv(tt.a, tt.b); got != tt.want {
			t.Errorf("floorDiv(%d, %d): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestPlanProperties checks, on random supersedes graphs and times, the
// rules no relay may break: a version no held entry supersedes is kept,
// every version of an unheld entry is kept, shortening retention never
// keeps more, and each (lineage, day) inside the daily window keeps at
// least one version.
func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		adds := make([]planAdd, n)
		for i := range adds {
			adds[i] = planAdd{
				v:      fmt.Sprintf("%c%d", 'a'+rapid.IntRange(0, 2).Draw(t, "author"), i),
				ago:    time.Duration(rapid.Int64Range(-2*24, 500*24).Draw(t, "hours")) * time.Hour,
				unheld: rapid.IntRange(0, 5).Draw(t, "unheld") == 0,
			}
			for j := range i {
				if rapid.IntRange(0, 3).Draw(t, "edge") == 0 {
					adds[i].sup = append(adds[i].sup, adds[j].v)
				}
			}
		}
		long := Retention{KeepAll: time.Duration(rapid.IntRange(1, 60).Draw(t, "keepDays")) * oneDay,
			Daily: time.Duration(rapid.IntRange(1, 400).Draw(t, "dailyDays")) * oneDay}
		short := Retention{KeepAll: long.KeepAll / 2, Daily: long.Daily / 2}
		pl, _ := runPlan(long, adds)
		ps, _ := runPlan(short, adds)

		heldSuper := map[string]bool{}
		for _, a := range adds {
			for _, s := range a.sup {
				heldSuper[s] = heldSuper[s] || !a.unheld
			}
		}
		for _, a := range adds {
			if (!heldSuper[a.v] || a.unheld) && !pl.retained(planVID(a.v)) {
				t.Fatalf("%s is a head or unheld but not retained", a.v)
			}
			if ps.retained(planVID(a.v)) && !pl.retained(planVID(a.v)) {
				t.Fatalf("%s retained under %+v but not under the longer %+v", a.v, short, long)
			}
		}
		type key struct {
			lineage int32
			day     int64
		}
		kept := map[key]bool{}
		cand := map[key]bool{}
		for _, a := range adds {
			i := pl.index[planVID(a.v)]
			nd := pl.nodes[i]
			if !nd.held || !nd.heldSuper || planNow.UnixMilli()-nd.at >= long.Daily.Milliseconds() {
				continue
			}
			k := key{pl.root(i), floorDiv(nd.at, msPerDay)}
			cand[k] = true
			kept[k] = kept[k] || nd.keep
		}
		for k := range cand {
			if !kept[k] {
				t.Fatalf("lineage %d day %d keeps no version", k.lineage, k.day)
			}
		}
	})
}
