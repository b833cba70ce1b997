package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// scrubCmd is `weft scrub`: re-verify the folder's files now.
func scrubCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "scrub [PATH]",
		Short: "Re-verify every file (or PATH) against its recorded hash now, and repair damaged ones",
		Long: `Reads every file whose size, mtime and inode match what weft recorded and checks
its content against the recorded hash. A file that does not match was damaged on
disk, not edited: it is moved aside into .weft/corrupt/ and the recorded version
is written again from this device's other files, peers or the relay; nothing is
sent to other devices. The agent does this in the background too, each file
about once a week (docs/folder.md, "Rot").`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req api.ScrubRequest
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
			var res []api.ScrubResult
			if err := cl.post("/v1/scrub", req, &res); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, res)
			}
			for _, r := range res {
				fmt.Fprintf(out, "%s: %d files verified (%s) in %.1fs, %d changed since the last scan (left to it), %d damaged\n",
					r.Folder, r.Files, doctor.HumanSize(r.Bytes), r.Seconds, r.Skipped, len(r.Corrupt))
				for _, p := range r.Corrupt {
					fmt.Fprintf(out, "  damaged: %s (moved to .weft/corrupt/, being written again)\n", p)
				}
				if r.VersionBytes > 0 || r.VersionCorrupt > 0 {
					fmt.Fprintf(out, "  local versions: %s verified, %d damaged chunks (dropped, fetched again from the vault's devices)\n",
						doctor.HumanSize(r.VersionBytes), r.VersionCorrupt)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (docs/api.md)")
	return c
}
