package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/bench"
)

// benchCmd runs the B-scenarios of BENCHMARKS.md on real weft processes,
// using this very executable as the agents' binary.
func benchCmd(g *globals) *cobra.Command {
	var scale, only, jsonPath, svgDir, dir, profileDir, agent, relayChunks, versitygw string
	var runs int
	var keepFree, maxData float64
	var noFsync bool
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmark scenarios on real weft processes on 127.0.0.1",
		Long: "Run the B-scenarios of BENCHMARKS.md: separate `weft up` agents with their own homes\n" +
			"under a temporary directory, on 127.0.0.1, with baselines measured in the same run.\n" +
			"Prints a table per scenario (median, min, max over --runs).",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc := bench.Scale(scale)
			if sc != bench.Smoke && sc != bench.Full && sc != bench.Tiny {
				return exitUsage{fmt.Errorf("--scale %q: want smoke or full", scale)}
			}
			if relayChunks != "pack" && relayChunks != "s3" {
				return exitUsage{fmt.Errorf("--relay-chunks %q: want pack or s3", relayChunks)}
			}
			bin, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the weft binary: %w", err)
			}
			if agent != "" {
				// Another build run by this harness: old and new measured
				// the same way, interleaved (docs/benchmarks.md).
				if bin, err = filepath.Abs(agent); err != nil {
					return fmt.Errorf("--agent: %w", err)
				}
				if _, err := os.Stat(bin); err != nil {
					return exitUsage{fmt.Errorf("--agent: %w", err)}
				}
			}
			var ids []string
			if only != "" {
				ids = strings.Split(only, ",")
			}
			if keepFree < 0 || maxData < 0 {
				return exitUsage{fmt.Errorf("--keep-free-gib and --max-gib must not be negative")}
			}
			keep := int64(keepFree * (1 << 30))
			if keep == 0 {
				keep = -1 // bench.Config: negative is none, 0 the default
			}
			if profileDir != "" {
				if err := os.MkdirAll(profileDir, 0o755); err != nil {
					return fmt.Errorf("profile directory: %w", err)
				}
			}
			rep, err := bench.Run(cmd.Context(), bench.Config{
				Bin: bin, Scale: sc, Only: ids, Runs: runs, Dir: dir,
				Out: cmd.OutOrStdout(), Fsyncs: !noFsync, InstallStrace: true,
				KeepFree: keep, MaxData: int64(maxData * (1 << 30)),
				ProfileDir: profileDir, RelayChunks: relayChunks, VersityGW: versitygw,
			})
			if rep != nil && jsonPath != "" {
				if werr := rep.WriteJSON(jsonPath); werr != nil {
					return werr
				}
				fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s\n", jsonPath)
			}
			if rep != nil && svgDir != "" {
				paths, werr := rep.WriteSVG(svgDir)
				if werr != nil {
					return werr
				}
				for _, p := range paths {
					fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", p)
				}
			}
			if err != nil {
				return err
			}
			for _, r := range rep.Results {
				if r.Error != "" {
					return fmt.Errorf("%s failed: %s", r.ID, firstLine(r.Error))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&scale, "scale", "smoke", "smoke or full (the sizes of BENCHMARKS.md)")
	c.Flags().StringVar(&only, "only", "", "comma-separated scenario IDs to run (B1,B2,...); default all")
	c.Flags().IntVar(&runs, "runs", 3, "repetitions of each scenario")
	c.Flags().StringVar(&agent, "agent", "", "run this weft binary as the agents and relays instead of this one (to compare two builds under one harness)")
	c.Flags().StringVar(&jsonPath, "json", "", "write the results as JSON to this file")
	c.Flags().StringVar(&svgDir, "svg", "", "write SVG charts (B2 latency, B3/B5 throughput) into this directory")
	c.Flags().StringVar(&dir, "dir", "", "scratch directory (default a new one under $TMPDIR, removed afterwards)")
	c.Flags().BoolVar(&noFsync, "no-fsync", false, "skip the strace pass that counts fsyncs")
	c.Flags().Float64Var(&keepFree, "keep-free-gib", bench.DefaultKeepFree>>30, "disk to leave free; a scenario that would use more runs smaller and says so")
	c.Flags().Float64Var(&maxData, "max-gib", 0, "cap each large scenario's data (B3, B3-relay, B4, B5, B6, B8) at this many GiB, for time; said in the output (0: no cap)")
	c.Flags().StringVar(&profileDir, "profile", "", "write a CPU profile of every agent and relay into this directory (SCENARIO-runN-PROC-K.pprof)")
	c.Flags().StringVar(&relayChunks, "relay-chunks", "pack", "where the relay scenarios' relays keep chunks: pack (files in the relay's home) or s3 (a versitygw on 127.0.0.1, started and killed by the bench; the object requests are recorded)")
	c.Flags().StringVar(&versitygw, "versitygw", "", "the versitygw binary for --relay-chunks s3 (default $WEFT_VERSITYGW, else versitygw on PATH)")
	return c
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
