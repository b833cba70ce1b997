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
	"S3": "S1's calm mix (no concurrent edits or restarts) with every odd device behind a NAT and one relay listed in the vault",
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
	case "S3":
		r, err := RunS3Scenario(ctx, o)
		if err != nil {
			return nil, err
		}
		return r.Result, nil
	case "S1", "S4":
		cfg := Config{Scenario: name, Seed: o.Seed, Devices: def(o.Devices, 50), Steps: def(o.Steps, 200),
			Duration: o.Duration, Until: o.Until, Probs: DefaultProbs, Link: link, Log: o.Log}
		if cfg.Duration <= 0 {
			cfg.Duration = 20 * time.Second
		}
		if name == "S4" {
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

// RunS3Scenario runs S3 with o's flags (defaults: 50 devices, 200 steps
// over 20 s) and returns the relay's numbers with the result.
func RunS3Scenario(ctx context.Context, o Options) (*S3Result, error) {
	cfg := Config{Scenario: "S3", Seed: o.Seed, Devices: o.Devices, Steps: o.Steps, Duration: o.Duration,
		Until: o.Until, Probs: CalmProbs, Link: LinkProps{Latency: 5 * time.Millisecond, Bandwidth: 10 << 20}, Log: o.Log}
	if cfg.Devices <= 0 {
		cfg.Devices = 50
	}
	if cfg.Steps <= 0 {
		cfg.Steps = 200
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 20 * time.Second
	}
	return RunS3(ctx, cfg)
}
