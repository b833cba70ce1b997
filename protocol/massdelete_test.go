package protocol

import "testing"

func TestMassDeleteExceeds(t *testing.T) {
	tests := []struct {
		name           string
		p              MassDeletePolicy
		deleted, files int
		want           bool
	}{
		{"nothing deleted", MassDeletePolicy{}, 0, 500, false},
		{"half of 500 is allowed", MassDeletePolicy{}, 250, 500, false},
		{"just over half of 500", MassDeletePolicy{}, 251, 500, true},
		{"180 of 200", MassDeletePolicy{}, 180, 200, true},
		{"450 of 500", MassDeletePolicy{}, 450, 500, true},
		{"all of 20 files is an ordinary edit", MassDeletePolicy{}, 20, 20, false},
		{"all of 21 files", MassDeletePolicy{}, 21, 21, true},
		{"1000 of 100000", MassDeletePolicy{}, 1000, 100_000, false},
		{"1001 of 100000", MassDeletePolicy{}, 1001, 100_000, true},
		{"off lets everything through", MassDeletePolicy{Off: true}, 5000, 5000, false},
		{"10 percent", MassDeletePolicy{Percent: 10}, 11, 100, true},
		{"10 percent, at the line", MassDeletePolicy{Percent: 10}, 10, 100, false},
		{"min files 1 holds small folders", MassDeletePolicy{MinFiles: 1}, 2, 2, true},
		{"max files 5", MassDeletePolicy{MaxFiles: 5}, 6, 100_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Exceeds(tt.deleted, tt.files); got != tt.want {
				t.Errorf("%+v.Exceeds(%d, %d) = %v, want %v", tt.p, tt.deleted, tt.files, got, tt.want)
			}
		})
	}
}

func TestMassDeleteValidate(t *testing.T) {
	for _, p := range []MassDeletePolicy{{Percent: 101}, {Percent: -1}, {MinFiles: -1}, {MaxFiles: -2}} {
		if p.Validate() == nil {
			t.Errorf("%+v: Validate accepted it", p)
		}
	}
	for _, p := range []MassDeletePolicy{{}, {Off: true}, {Percent: 100, MinFiles: 0, MaxFiles: 1}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if got := (MassDeletePolicy{}).Effective(); got != DefaultMassDelete {
		t.Errorf("zero policy's Effective = %+v, want %+v", got, DefaultMassDelete)
	}
}
