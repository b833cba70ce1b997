package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// folderVersionsCmd is `weft folder versions`: what a folder's local
// version store holds, and its policy (docs/history.md, "Local versions").
func folderVersionsCmd(g *globals) *cobra.Command {
	var (
		off, on         bool
		budget, maxSize string
		percent         float64
		keepAllDays     int
		asJSON          bool
	)
	c := &cobra.Command{
		Use:   "versions [FOLDER] [--off | --on] [--budget SIZE | --percent N --max SIZE] [--keep-all-days N]",
		Short: "Show or set how many old versions this device keeps of FOLDER's files",
		Long: `Every device keeps the content its folder's files had before they were edited,
replaced or deleted, in a version store in its home, so ` + "`weft restore`" + ` works with no
other device online. Every version is kept for --keep-all-days (30), then one a
day, within a budget: --percent of the folder's size (10, at least 256 MiB, at most
--max, 20 GiB) or a fixed --budget. The oldest go first. With no flag it prints
what the store holds; a flag left out keeps its default.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			changing := off || on || budget != "" || maxSize != "" || percent != 0 || keepAllDays != 0
			if !changing {
				var infos []api.VersionsInfo
				if err := cl.get("/v1/versions", &infos); err != nil {
					return err
				}
				if len(args) == 1 {
					abs, err := filepath.Abs(args[0])
					if err != nil {
						return err
					}
					var only []api.VersionsInfo
					for _, in := range infos {
						if filepath.Clean(in.Folder) == abs {
							only = append(only, in)
						}
					}
					if len(only) == 0 {
						return fmt.Errorf("%s is not a synced folder (see `weft status`)", abs)
					}
					infos = only
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), infos)
				}
				for _, in := range infos {
					printVersions(cmd.OutOrStdout(), in)
				}
				return nil
			}
			if len(args) != 1 {
				return exitUsage{fmt.Errorf("say which FOLDER to set")}
			}
			if off && on {
				return exitUsage{fmt.Errorf("--off and --on together")}
			}
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			p := api.VersionPolicy{Off: off, Percent: percent, KeepAllDays: keepAllDays}
			if budget != "" {
				n, err := parseSize(budget)
				if err != nil || n == 0 {
					return exitUsage{fmt.Errorf("--budget %q: want a size such as 2GiB", budget)}
				}
				p.Budget = int64(n)
			}
			if maxSize != "" {
				n, err := parseSize(maxSize)
				if err != nil || n == 0 {
					return exitUsage{fmt.Errorf("--max %q: want a size such as 20GiB", maxSize)}
				}
				p.MaxBytes = int64(n)
			}
			if err := p.Validate(); err != nil {
				return exitUsage{err}
			}
			var info api.VersionsInfo
			if err := cl.post("/v1/folders/versions", api.VersionsRequest{Folder: abs, Policy: p}, &info); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			printVersions(cmd.OutOrStdout(), info)
			return nil
		},
	}
	c.Flags().BoolVar(&off, "off", false, "keep no versions (and drop those kept)")
	c.Flags().BoolVar(&on, "on", false, "keep versions again, with the defaults")
	c.Flags().StringVar(&budget, "budget", "", "a fixed budget (2GiB, 500MB) instead of a share of the folder")
	c.Flags().Float64Var(&percent, "percent", 0, "budget as a share of the folder's size (default 10)")
	c.Flags().StringVar(&maxSize, "max", "", "the most a --percent budget may be (default 20GiB)")
	c.Flags().IntVar(&keepAllDays, "keep-all-days", 0, "keep every version this many days, then one a day (default 30)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md)")
	return c
}

// printVersions renders one folder's local versions.
func printVersions(w io.Writer, in api.VersionsInfo) {
	switch {
	case !in.Available:
		fmt.Fprintf(w, "%s: local versions unavailable (the version store could not be opened; see the agent's log)\n", in.Folder)
		return
	case in.Policy.Off:
		fmt.Fprintf(w, "%s: local versions off; %d versions (%s) still held until the next prune\n", in.Folder, in.Versions, doctor.HumanSize(in.Bytes))
		return
	}
	days := in.Policy.KeepAllDays
	if days == 0 {
		days = 30
	}
	fmt.Fprintf(w, "%s: %d versions kept, %s of a %s budget (%s on disk); every version for %d days, then one a day\n",
		in.Folder, in.Versions, doctor.HumanSize(in.Bytes), doctor.HumanSize(in.BudgetBytes), doctor.HumanSize(in.BytesOnDisk), days)
	if in.Skipped+in.Failed+in.Dropped > 0 {
		fmt.Fprintf(w, "  since start: %d kept, %d not kept by the policy (too large, over budget, low disk or edited again at once), %d failed, %d dropped\n",
			in.Kept, in.Skipped, in.Failed, in.Dropped)
	}
}
