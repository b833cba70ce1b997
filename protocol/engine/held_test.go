package engine

import (
	"slices"
	"testing"
)

// facts is a Holding with fixed answers that records which it was asked.
type facts struct {
	inline, superseded, applied, stored bool
	asked                               []string
}

func (f *facts) Inline() bool     { f.asked = append(f.asked, "inline"); return f.inline }
func (f *facts) Superseded() bool { f.asked = append(f.asked, "superseded"); return f.superseded }
func (f *facts) Applied() bool    { f.asked = append(f.asked, "applied"); return f.applied }
func (f *facts) Stored() bool     { f.asked = append(f.asked, "stored"); return f.stored }

// TestHeld: one rule, two policies. A version is held when nothing is to
// be fetched for it, when something here supersedes it, or when its
// content is where the policy keeps content (a device's folder, a relay's
// chunk store); a device never counts stored chunks and a relay never asks
// for a folder.
func TestHeld(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		f      facts
		want   bool
		asked  []string
	}{
		{"device inline", DevicePolicy, facts{inline: true}, true, []string{"inline"}},
		{"device applied", DevicePolicy, facts{applied: true}, true, []string{"inline", "applied"}},
		{"device superseded", DevicePolicy, facts{superseded: true}, true, []string{"inline", "applied", "superseded"}},
		{"device chunks stored but not applied", DevicePolicy, facts{stored: true}, false, []string{"inline", "applied", "superseded"}},
		{"device nothing", DevicePolicy, facts{}, false, []string{"inline", "applied", "superseded"}},
		{"relay inline", RelayPolicy, facts{inline: true}, true, []string{"inline"}},
		{"relay superseded", RelayPolicy, facts{superseded: true}, true, []string{"inline", "superseded"}},
		{"relay stored", RelayPolicy, facts{stored: true}, true, []string{"inline", "superseded", "stored"}},
		{"relay applied is no folder of its own", RelayPolicy, facts{applied: true}, false, []string{"inline", "superseded", "stored"}},
		{"relay nothing", RelayPolicy, facts{}, false, []string{"inline", "superseded", "stored"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			if got := tt.policy.Held(&f); got != tt.want {
				t.Errorf("%s.Held = %v, want %v", tt.policy, got, tt.want)
			}
			if !slices.Equal(f.asked, tt.asked) {
				t.Errorf("asked %v, want %v", f.asked, tt.asked)
			}
		})
	}
}
