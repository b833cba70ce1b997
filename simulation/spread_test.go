package simulation

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestSpreadFromEnv runs S2 at a size set by SIM_SPREAD_DEVICES (skipped
// when unset), with SIM_SPREAD_PAIR=1 building the cluster by pairing
// each device instead of batch setup, SIM_SPREAD_SEED (default 7) and
// SIM_SPREAD_TIMEOUT (seconds, default 300).
func TestSpreadFromEnv(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SIM_SPREAD_DEVICES"))
	if n == 0 {
		t.Skip("set SIM_SPREAD_DEVICES to run")
	}
	seed, err := strconv.ParseUint(os.Getenv("SIM_SPREAD_SEED"), 10, 64)
	if err != nil {
		seed = 7
	}
	timeout := 300 * time.Second
	if s, err := strconv.Atoi(os.Getenv("SIM_SPREAD_TIMEOUT")); err == nil {
		timeout = time.Duration(s) * time.Second
	}
	res, err := Spread(context.Background(), SpreadConfig{Scenario: "S2", Seed: seed, Devices: n, Degree: 6,
		Link: LinkProps{Latency: 5 * time.Millisecond, Bandwidth: 10 << 20}, Timeout: timeout,
		Pair: os.Getenv("SIM_SPREAD_PAIR") == "1", Dir: t.TempDir(), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	WriteTable(os.Stdout, res)
	for _, f := range res.Failures {
		t.Error(f)
	}
}
