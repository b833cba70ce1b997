package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// exitProblems is doctor's exit code when it found a problem.
const exitProblems = 3

func doctorCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor [PATH]",
		Short: "Explain why a folder (or PATH) is not in sync, and what to do about it",
		Long: "Rescans, then reports what is pending and what it waits on, how each peer is reached,\n" +
			"the watcher's and the disk's health and clock skew; every finding says what to do.\n" +
			"Exit status: 0 no problem found, 3 problems found, 1 doctor could not run, 2 bad usage.",
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			q := ""
			if len(args) == 1 {
				abs, err := filepath.Abs(args[0])
				if err != nil {
					return err
				}
				q = "?path=" + url.QueryEscape(abs)
			}
			var d api.Diagnosis
			if err := cl.get("/v1/doctor"+q, &d); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, d); err != nil {
					return err
				}
			} else {
				printDiagnosis(out, d)
			}
			if !d.Healthy {
				os.Exit(exitProblems)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the diagnosis as JSON (docs/api.md)")
	return c
}

// printDiagnosis renders a diagnosis for people: the folders and peers,
// then the findings, each with what to do.
func printDiagnosis(w io.Writer, d api.Diagnosis) {
	for _, f := range d.Folders {
		fmt.Fprintf(w, "folder %s: %s; pending %d to apply, %d to fetch, %d to upload; unsafe %d\n",
			f.Path, f.State, f.PendingApply, f.PendingFetch, f.PendingUpload, f.Unsafe)
		wt := "watcher off"
		if f.Watcher.Enabled {
			wt = fmt.Sprintf("watcher on: %d directories", f.Watcher.Directories)
			if f.Watcher.MaxUserWatches > 0 {
				wt += fmt.Sprintf(" of %d inotify watches", f.Watcher.MaxUserWatches)
			}
			if f.Watcher.OverflowRescans > 0 {
				wt += fmt.Sprintf(", %d overflows", f.Watcher.OverflowRescans)
			}
		}
		disk := ""
		if f.DiskTotalBytes > 0 {
			disk = fmt.Sprintf("; disk %s free of %s", doctor.HumanSize(f.DiskFreeBytes), doctor.HumanSize(f.DiskTotalBytes))
		}
		fmt.Fprintf(w, "  %s%s\n", wt, disk)
	}
	for _, p := range d.Peers {
		if p.Name != "" {
			p.ID = p.Name + " (" + p.ID + ")"
		}
		if !p.Reachable {
			seen := "never seen"
			if p.LastSeen != nil {
				seen = "last seen " + p.LastSeen.Local().Format(time.DateTime)
			}
			fmt.Fprintf(w, "peer %s: offline, %s\n", p.ID, seen)
			continue
		}
		rtt := "rtt unknown"
		if p.RTTMillis != nil {
			rtt = fmt.Sprintf("rtt %.1f ms", *p.RTTMillis)
		}
		sync := "in sync"
		if !p.InSync {
			sync = "behind"
		}
		line := fmt.Sprintf("peer %s: %s, %s, %s, receiving %s/s, sending %s/s", p.ID, p.Connection, rtt, sync,
			doctor.HumanSize(int64(p.RecvBytesPerSec)), doctor.HumanSize(int64(p.SentBytesPerSec)))
		if p.ClockSkewMillis != nil {
			line += fmt.Sprintf(", clock %+.1f s", float64(*p.ClockSkewMillis)/1000)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	for _, f := range d.Findings {
		fmt.Fprintf(w, "%-7s %s\n", f.Severity, f.Message)
		if f.Fix != "" && f.Fix != "nothing" {
			fmt.Fprintf(w, "%-7s -> %s\n", "", f.Fix)
		}
	}
	if len(d.Findings) == 0 {
		fmt.Fprintln(w, strings.TrimSpace("no findings"))
	}
}
