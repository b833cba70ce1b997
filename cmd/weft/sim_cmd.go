package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/simulation"
	"github.com/weftsync/weft/simulation/detsim"
)

// simCmd is `weft sim SCENARIO`: many real nodes in this process over a
// simulated network (simulation/, docs/simulation.md).
func simCmd(g *globals) *cobra.Command {
	var (
		seed     uint64
		devices  int
		steps    int
		duration time.Duration
		replay   uint64
		until    int
		jsonFile string
		svgDir   string
		out      string
		nSeeds   int
		trace    string
		stopAny  bool
	)
	var names []string
	for k, v := range simulation.Scenarios {
		names = append(names, k+": "+v)
	}
	slices.Sort(names)
	cmd := &cobra.Command{
		Use:   "sim SCENARIO",
		Short: "Run a simulation scenario (S1-S5, or engine) of many devices in one process",
		Long: "Scenarios:\n  " + strings.Join(names, "\n  ") + "\n\nA failure prints the seed and step; --replay SEED --until STEP re-runs the same schedule up to that step." +
			"\n\nengine is the deterministic tier (simulation/detsim): the sync engine's rules on simulated devices with a virtual clock; " +
			"--seeds N runs seeds --seed.. --seed+N-1 (default 1000 from 1), and a failing seed replays exactly with --seed S --seeds 1 --trace FILE.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.EqualFold(args[0], "engine") {
				first := uint64(1)
				if cmd.Flags().Changed("seed") {
					first = seed
				}
				return runEngineSim(cmd, detsim.Config{Devices: devices, Steps: steps, StopAnywhere: stopAny}, first, nSeeds, trace, jsonFile)
			}
			if cmd.Flags().Changed("replay") {
				seed = replay
			} else if !cmd.Flags().Changed("seed") {
				seed = uint64(time.Now().UnixNano())
			}
			name := strings.ToUpper(args[0])
			fmt.Fprintf(cmd.OutOrStdout(), "weft sim %s --seed %d\n", name, seed)
			opts := simulation.Options{
				Seed: seed, Devices: devices, Steps: steps, Duration: duration, Until: until, Log: cmd.ErrOrStderr(),
			}
			var (
				res *simulation.Result
				s3  *simulation.S3Result
				err error
			)
			if name == "S3" { // S3 also reports the relay's counters
				if s3, err = simulation.RunS3Scenario(cmd.Context(), opts); err == nil {
					res = s3.Result
				}
			} else {
				res, err = simulation.RunScenario(cmd.Context(), name, opts)
			}
			if err != nil {
				return err
			}
			if s3 != nil {
				simulation.WriteS3Table(cmd.OutOrStdout(), s3)
			} else {
				simulation.WriteTable(cmd.OutOrStdout(), res)
			}
			if jsonFile == "" {
				jsonFile = filepath.Join(out, fmt.Sprintf("sim-%s-%d.json", name, seed))
			}
			if svgDir == "" {
				svgDir = filepath.Join(out, fmt.Sprintf("sim-%s-%d", name, seed))
			}
			writeJSON := func() error { return simulation.WriteJSON(jsonFile, res) }
			if s3 != nil {
				writeJSON = func() error { return simulation.WriteS3JSON(jsonFile, s3) }
			}
			if err := writeJSON(); err != nil {
				return err
			}
			if err := simulation.WriteSVGs(svgDir, res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s/{latency-cdf,convergence}.svg\n", jsonFile, svgDir)
			if !res.OK() {
				fmt.Fprintf(cmd.OutOrStdout(), "replay: weft sim %s --replay %d --until STEP --devices %d\n", name, seed, devices)
				os.Exit(1)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&seed, "seed", 0, "schedule seed (default: from the clock, printed)")
	f.IntVar(&devices, "devices", 0, "number of devices (default: the scenario's)")
	f.IntVar(&steps, "steps", 0, "schedule steps for S1/S3/S4 (default 200)")
	f.DurationVar(&duration, "duration", 0, "schedule phase length (S1/S3/S4, default 20s) or spread timeout (S2/S5)")
	f.Uint64Var(&replay, "replay", 0, "replay the schedule of this seed")
	f.IntVar(&until, "until", 0, "with --replay: run steps before this one only")
	f.StringVar(&jsonFile, "json", "", "JSON result file (default sim-SCENARIO-SEED.json in --out)")
	f.StringVar(&svgDir, "svg", "", "directory for SVG charts (default sim-SCENARIO-SEED/ in --out)")
	f.StringVar(&out, "out", ".", "directory for the default JSON and SVG outputs")
	f.IntVar(&nSeeds, "seeds", 1000, "engine: how many seeds to run, from --seed")
	f.StringVar(&trace, "trace", "", "engine: write the trace of the (single) seed to this file (- for standard output)")
	f.BoolVar(&stopAny, "stop-anywhere", false, "engine: devices also stop and start between any two operations, with entries not applied yet (the schedules of TestSeedsStopAnywhere)")
	_ = g
	return cmd
}

// runEngineSim is `weft sim engine`: n seeds of the deterministic tier
// from first, a table of what they did, every failing seed with the
// command that replays it, and (jsonFile) the summary as JSON. It fails
// when any seed fails.
func runEngineSim(cmd *cobra.Command, cfg detsim.Config, first uint64, n int, trace, jsonFile string) error {
	w := cmd.OutOrStdout()
	if n <= 0 {
		return fmt.Errorf("--seeds must be at least 1, got %d", n)
	}
	if trace != "" {
		if n != 1 {
			return fmt.Errorf("--trace traces one seed: give --seeds 1 (got %d)", n)
		}
		tw := w
		if trace != "-" {
			f, err := os.Create(trace)
			if err != nil {
				return fmt.Errorf("creating the trace file: %w", err)
			}
			defer f.Close()
			tw = f
		}
		cfg.Trace = tw
	}
	var sum detsim.Summary
	if cfg.Trace != nil {
		cfg.Seed = first
		r := detsim.Run(cfg)
		sum = detsim.Summary{First: first, Seeds: 1, Totals: r, Digests: []string{r.Digest}}
		if !r.OK() {
			sum.Failed = []detsim.Result{r}
		}
	} else {
		sum = detsim.RunSeeds(cfg, first, n)
	}
	t := sum.Totals
	stop := ""
	if cfg.StopAnywhere {
		stop = " --stop-anywhere"
	}
	fmt.Fprintf(w, "weft sim engine --seed %d --seeds %d%s\n", first, n, stop)
	fmt.Fprintf(w, "%-16s %s\n", "digest", t.Digest)
	for _, row := range []struct {
		name string
		n    int
	}{
		{"seeds failed", len(sum.Failed)}, {"entries", t.Entries}, {"conflict copies", t.Conflicts},
		{"clean merges", t.Merges}, {"history waits", t.Waits}, {"adopted heads", t.Adoptions},
		{"restarts", t.Restarts}, {"deletion holds", t.Holds}, {"holds accepted", t.Accepts},
		{"holds rejected", t.Rejects}, {"racing saves", t.RacingSaves}, {"files at end", t.Files},
	} {
		fmt.Fprintf(w, "%-16s %d\n", row.name, row.n)
	}
	for _, r := range sum.Failed {
		fmt.Fprintf(w, "seed %d: %s\n  replay: weft sim engine --seed %d --seeds 1%s --trace seed-%d.trace\n", r.Seed, strings.Join(r.Failures, "; "), r.Seed, stop, r.Seed)
	}
	if jsonFile != "" {
		b, err := json.MarshalIndent(sum, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonFile, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", jsonFile, err)
		}
	}
	if len(sum.Failed) > 0 {
		return fmt.Errorf("%d of %d seeds failed", len(sum.Failed), n)
	}
	return nil
}
