package connect

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

func TestRedialBackoff(t *testing.T) {
	r := NewRedial()
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	t0 := time.Unix(1_800_000_000, 0)
	if !r.Due(a, t0) {
		t.Fatal("a device never dialled is not due")
	}
	now := t0
	var waits []time.Duration
	for range 9 {
		w := r.Failed(a, now)
		waits = append(waits, w)
		if r.Due(a, now.Add(w-time.Nanosecond)) {
			t.Fatalf("due %v after a failure that set a %v wait", w-time.Nanosecond, w)
		}
		now = now.Add(w)
		if !r.Due(a, now) {
			t.Fatalf("not due once its %v wait is over", w)
		}
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits after 9 failures: got %v, want %v seconds", waits, want)
		}
	}
	if !r.Due(b, t0) {
		t.Error("another device's failures delayed b")
	}
	r.Succeeded(a)
	if !r.Due(a, t0) {
		t.Error("not due after a success")
	}
	if w := r.Failed(a, now); w != time.Second {
		t.Errorf("first failure after a success waits %v, want 1s", w)
	}
}
