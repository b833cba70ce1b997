package simulation

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Options are the flags every scenario takes. Zero values pick the
// scenario's defaults (Scenarios).
type Options struct {
	Seed     uint64
	Devices  int
	Duration time.Duration
	Steps    int
	// Until > 0 replays the schedule up to (not including) that step.
	Until int
	Log   io.Writer
}

// Scenarios describes S1-S5 and their default sizes.
var Scenarios = map[string]string{
	"S1": "50 devices, random schedule of writes, deletes, renames, concurrent edits, partitions and restarts",
	"S2": "one 256 KiB edit reaching 200 devices (ring plus random chords, degree 6)",
	"S3": "S1 with every odd device behind a NAT plus one public hub device (no relay: the hub is a device everyone can reach)",
	"S4": "S1 plus joins, leaves and more restarts",
	"S5": "S2 with 1,000 devices",
}

// RunScenario runs one of S1-S5.
func RunScenario(ctx context.Context, name string, o Options) (*Result, error) {
	def := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	link := LinkProps{Latency: 5 * time.Millisecond, Bandwidth: 10 << 20}
	switch name {
	case "S1", "S3", "S4":
		cfg := Config{Scenario: name, Seed: o.Seed, Devices: def(o.Devices, 50), Steps: def(o.Steps, 200),
			Duration: o.Duration, Until: o.Until, Probs: DefaultProbs, Link: link, Log: o.Log}
		if cfg.Duration <= 0 {
			cfg.Duration = 20 * time.Second
		}
		switch name {
		case "S3":
			cfg.NAT, cfg.Hub = true, true
		case "S4":
			cfg.Probs = ChurnProbs
		}
		return Run(ctx, cfg)
	case "S2", "S5":
		cfg := SpreadConfig{Scenario: name, Seed: o.Seed, Devices: def(o.Devices, 200), Degree: 6, Link: link, Log: o.Log}
		if name == "S5" {
			cfg.Devices = def(o.Devices, 1000)
		}
		if o.Duration > 0 {
			cfg.Timeout = o.Duration
		}
		return Spread(ctx, cfg)
	}
	return nil, fmt.Errorf("simulation: unknown scenario %q (S1 to S5)", name)
}
