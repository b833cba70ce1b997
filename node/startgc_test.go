package node

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
)

func gcPercent() int64 {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestStartGCRestores: the collector aims at startGCPercent while any
// open or first scan is under way, and the percent in force before comes
// back once the last is done, each done counted once.
func TestStartGCRestores(t *testing.T) {
	if userGCPolicy() {
		t.Skip("GOGC or GOMEMLIMIT set: the start policy leaves the collector alone")
	}
	prev := debug.SetGCPercent(120)
	defer debug.SetGCPercent(prev)
	a := startBusy()
	b := startBusy()
	if got := gcPercent(); got != startGCPercent {
		t.Fatalf("GOGC %d during the start, want %d", got, startGCPercent)
	}
	a()
	a() // a second call is a no-op
	if got := gcPercent(); got != startGCPercent {
		t.Fatalf("GOGC %d with one vault still starting, want %d", got, startGCPercent)
	}
	b()
	if got := gcPercent(); got != 120 {
		t.Fatalf("GOGC %d after the start, want the 120 set before", got)
	}
}
