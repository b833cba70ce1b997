package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// restoreCmd brings back an old version of a path, or of the whole folder
// (docs/history.md).
func restoreCmd(g *globals) *cobra.Command {
	var req api.RestoreRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "restore [PATH] (--version ID | --at TIME | --all --at TIME) [--dry-run]",
		Short: "Bring back an old version of PATH, or every path as of a time, as new versions (needs `weft up` running)",
		Long: "Writes the old content as a new version that supersedes what is current; every device\n" +
			"receives it like any edit. Content not held here is fetched from connected devices; if none\n" +
			"holds it, nothing changes. TIME is RFC 3339 (2026-11-30T06:00:00Z) or relative (-2h, -90m, -3d);\n" +
			"the version current at TIME is taken. --all restores every path (under PATH, if given):\n" +
			"paths created after TIME are deleted. A file changed since its last scan is never overwritten.\n" +
			"If any path cannot be restored, nothing changes and every such path is named with the reason;\n" +
			"--partial restores the rest. Content comes from this folder, this device's version store\n" +
			"(`weft folder versions`), or connected devices and relays.",
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case req.Version != "" && (req.At != "" || req.All):
				return exitUsage{errors.New("--version goes without --at and --all")}
			case req.All && req.At == "":
				return exitUsage{errors.New("--all needs --at TIME")}
			case !req.All && len(args) == 0:
				return exitUsage{errors.New("restore needs a PATH (or --all --at TIME)")}
			case !req.All && req.Version == "" && req.At == "":
				return exitUsage{errors.New("say which version: --version ID (see `weft history PATH`) or --at TIME")}
			}
			if len(args) == 1 {
				abs, err := filepath.Abs(args[0])
				if err != nil {
					return err
				}
				req.Path = abs
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			var res api.RestoreResult
			if err := cl.post("/v1/restore", req, &res); err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				printRestore(cmd.OutOrStdout(), res)
			}
			if len(res.Failed) > 0 && !res.DryRun {
				return fmt.Errorf("%d paths could not be restored", len(res.Failed))
			}
			return nil
		},
	}
	c.Flags().StringVar(&req.Version, "version", "", "the version to bring back (an ID from `weft history`)")
	c.Flags().StringVar(&req.At, "at", "", "bring back what was current at this time: RFC 3339, or relative (-2h, -3d)")
	c.Flags().BoolVar(&req.All, "all", false, "restore every path (under PATH, if given) as of --at")
	c.Flags().BoolVar(&req.DryRun, "dry-run", false, "list what would change (and what cannot be restored); change nothing")
	c.Flags().BoolVar(&req.Partial, "partial", false, "restore what can be restored when some paths cannot (default: change nothing then)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md)")
	return c
}

// printRestore renders what a restore changed (or would change).
func printRestore(w io.Writer, res api.RestoreResult) {
	for _, f := range res.Failed {
		p := filepath.Join(f.Folder, filepath.FromSlash(f.Path))
		fmt.Fprintf(w, "%-14s %s: %s\n", "cannot restore", p, f.Reason)
	}
	if len(res.Changes) == 0 && len(res.Failed) > 0 {
		return
	}
	if len(res.Changes) == 0 {
		fmt.Fprintln(w, "nothing to restore: the folder already holds that content")
		return
	}
	verb := map[string]string{"restore": "restored", "delete": "deleted"}
	if res.DryRun {
		verb = map[string]string{"restore": "would restore", "delete": "would delete"}
	}
	for _, c := range res.Changes {
		p := filepath.Join(c.Folder, filepath.FromSlash(c.Path))
		line := fmt.Sprintf("%-14s %s", verb[c.Action], p)
		if c.Action == "restore" {
			line += fmt.Sprintf(" from %s (%s", c.From, c.Kind)
			if c.Kind == "file" {
				line += ", " + doctor.HumanSize(int64(c.Size))
				if c.Content != "" {
					line += ", content " + c.Content
				}
			}
			line += ")"
		}
		if c.Version != "" {
			line += " as " + c.Version
		}
		if c.Unrecorded {
			line += " (on disk now; recorded and sent once this device hears from another device or relay)"
		}
		fmt.Fprintln(w, line)
	}
	if res.DryRun {
		fmt.Fprintf(w, "%d paths would change; nothing was changed (run again without --dry-run)\n", len(res.Changes))
	}
}
