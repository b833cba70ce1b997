package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
)

// deletionsCmd is `weft deletions`: the deletions the mass-delete guard
// holds, and the user's decision about them (docs/folder.md, "Mass
// deletions").
func deletionsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "deletions",
		Short: "List deletions held by the mass-delete guard; accept or reject them",
		Long: `A scan that finds most of a folder deleted, or peers' entries that would delete
most of it here, is held instead of synced: the folder shows "held" in
` + "`weft status`" + `. This lists what is held; ` + "`weft deletions accept [FOLDER]`" + ` lets
the deletions go through (recorded and sent to other devices, or applied
here), ` + "`weft deletions reject [FOLDER]`" + ` brings the files back instead.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var held []api.HeldDeletions
			if err := cl.get("/v1/deletions", &held); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, held)
			}
			if len(held) == 0 {
				fmt.Fprintln(out, "no deletions are held")
				return nil
			}
			for _, h := range held {
				what := "deleted on this device, not sent to other devices"
				if h.Direction == "incoming" {
					what = "deleted by another device, not deleted here"
				}
				fmt.Fprintf(out, "%s: %d files %s (held since %s; guard: %s)\n", h.Folder, h.Files, what, h.Since.Local().Format(time.DateTime), h.Policy)
				tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
				for _, p := range h.Paths[:min(len(h.Paths), 20)] {
					fmt.Fprintf(tw, "  %s\n", p)
				}
				if more := h.Total - min(len(h.Paths), 20); more > 0 {
					fmt.Fprintf(tw, "  ... and %d more (--json lists up to 1,000)\n", more)
				}
				tw.Flush()
			}
			fmt.Fprintln(out, "\n`weft deletions accept [FOLDER]` lets them go through; `weft deletions reject [FOLDER]` brings the files back.")
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the documented JSON shape (docs/api.md)")
	c.AddCommand(decideCmd(g, "accept", "Let held deletions go through: record the local ones, apply the incoming ones"),
		decideCmd(g, "reject", "Bring the files whose deletion is held back, on this device and the others"))
	return c
}

func decideCmd(g *globals, action, short string) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   action + " [FOLDER]",
		Short: short,
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.DeletionsRequest{Action: action}
			if len(args) == 1 {
				abs, err := filepath.Abs(args[0])
				if err != nil {
					return err
				}
				req.Folder = abs
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			var res api.DeletionsResult
			if err := cl.post("/v1/deletions", req, &res); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, res)
			}
			if action == "accept" {
				fmt.Fprintf(out, "%s: %d local deletions recorded, %d incoming deletions being applied\n", res.Folder, res.Local, res.Incoming)
			} else {
				fmt.Fprintf(out, "%s: %d files being brought back here, %d files kept and sent back to the other devices\n", res.Folder, res.Local, res.Incoming)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// folderCmd is `weft folder`: what a user does about a folder itself.
func folderCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "folder",
		Short: "Reset a stopped folder, set its mass-delete guard, or its local versions",
	}
	reset := &cobra.Command{
		Use:   "reset FOLDER",
		Short: "Sync a stopped folder as it is now (writes its folder marker)",
		Long: `A folder whose marker (.weft/folder-marker) is missing or names another vault
is stopped: nothing is scanned or applied, so an unmounted drive or an empty
folder put in its place cannot delete your files everywhere. Put the real
folder back and it resumes by itself. If this really is the folder now, reset
it: weft writes the marker and syncs the folder as it is. Files missing from it
then count as deleted, and the mass-delete guard holds most-of-the-folder
deletions for ` + "`weft deletions`" + ` (reject fills the folder again from the other
devices).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if err := cl.post("/v1/folders/reset", api.FolderRequest{Folder: abs}, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: reset; syncing it as it is now (see `weft status`)\n", abs)
			return nil
		},
	}
	var pol protocol.MassDeletePolicy
	guard := &cobra.Command{
		Use:   "guard FOLDER [--off | --percent N --min-files N --max-files N]",
		Short: "Set when a mass deletion in FOLDER waits for you",
		Long: `Deleting more than --percent of a folder of over --min-files files, or over
--max-files files at once, waits for ` + "`weft deletions accept|reject`" + `, both for
deletions made here and for deletions arriving from other devices. The
defaults are 50 %, 20 files and 1,000 files; a flag left out keeps its default.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if err := pol.Validate(); err != nil {
				return exitUsage{err}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			var res struct {
				Policy string `json:"policy"`
			}
			if err := cl.post("/v1/folders/guard", api.FolderRequest{Folder: abs, MassDelete: &pol}, &res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: mass-delete guard: %s\n", abs, strings.TrimSpace(res.Policy))
			return nil
		},
	}
	guard.Flags().BoolVar(&pol.Off, "off", false, "turn the guard off: every deletion goes through")
	guard.Flags().IntVar(&pol.Percent, "percent", 0, "share of the folder's files (1-100; default 50)")
	guard.Flags().IntVar(&pol.MinFiles, "min-files", 0, "folders of this many files or fewer are not held by --percent (default 20)")
	guard.Flags().IntVar(&pol.MaxFiles, "max-files", 0, "deleting more than this many files at once is held (default 1000)")
	c.AddCommand(reset, guard, folderVersionsCmd(g))
	return c
}
