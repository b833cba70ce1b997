package engine

import (
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

func TestAuthoringGate(t *testing.T) {
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	tests := []struct {
		name string
		in   AuthoringInput
		open bool
	}{
		{"alone opens at once", AuthoringInput{Head: 3}, true},
		{"alone, tail lost: nobody else holds it", AuthoringInput{Head: 3, LostTo: 9}, true},
		{"membership lost holds even alone", AuthoringInput{Head: 3, MembersLost: true}, false},
		{"no vector heard yet", AuthoringInput{Head: 3, Peers: []keys.DeviceID{a}}, false},
		{"peer holds no more", AuthoringInput{Head: 3, Peers: []keys.DeviceID{a}, Heard: map[keys.DeviceID]uint64{a: 3}}, true},
		{"peer holds less", AuthoringInput{Head: 3, Peers: []keys.DeviceID{a}, Heard: map[keys.DeviceID]uint64{a: 1}}, true},
		{"peer holds more: take it back first", AuthoringInput{Head: 3, Peers: []keys.DeviceID{a}, Heard: map[keys.DeviceID]uint64{a: 5}}, false},
		{"any peer holding more holds", AuthoringInput{Head: 5, Peers: []keys.DeviceID{a, b}, Heard: map[keys.DeviceID]uint64{a: 5, b: 6}}, false},
		{"Forked: what cannot chain is not waited for", AuthoringInput{Head: 3, Peers: []keys.DeviceID{a}, Heard: map[keys.DeviceID]uint64{a: 5}, Forked: true}, true},
		{"a stranger's vector counts too", AuthoringInput{Head: 3, Peers: []keys.DeviceID{a}, Heard: map[keys.DeviceID]uint64{b: 4}}, false},
		{"lost tail, one of two heard without it", AuthoringInput{Head: 3, LostTo: 5, Peers: []keys.DeviceID{a, b}, Heard: map[keys.DeviceID]uint64{a: 3}}, false},
		{"lost tail, every peer Heard: nobody holds it", AuthoringInput{Head: 3, LostTo: 5, Peers: []keys.DeviceID{a, b}, Heard: map[keys.DeviceID]uint64{a: 3, b: 2}}, true},
		{"lost tail taken back", AuthoringInput{Head: 5, LostTo: 5, Peers: []keys.DeviceID{a, b}, Heard: map[keys.DeviceID]uint64{a: 5}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, reason := AuthoringGate(tt.in)
			if open != tt.open {
				t.Fatalf("got open %v (%q), want %v", open, reason, tt.open)
			}
			if !open && reason == "" {
				t.Fatal("held without a reason")
			}
		})
	}
}
