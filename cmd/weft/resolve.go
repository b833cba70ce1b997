package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
)

// resolveCmd settles a conflict copy (docs/conflicts.md).
func resolveCmd(g *globals) *cobra.Command {
	var req api.ResolveRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "resolve PATH (--keep winner|copy|both | --take FILE)",
		Short: "Settle a conflict copy: keep what holds the name, the copy, both, or a file you merged (needs `weft up` running)",
		Long: "PATH is a conflict copy (`weft conflicts` lists them), or the file it is a copy of when that\n" +
			"file has one copy. --keep winner removes the copy; --keep copy puts the copy's content at the\n" +
			"name and removes the copy; --keep both renames the copy to an ordinary file beside the name,\n" +
			"called after the device whose content it holds (\"notes (laptop).md\"); --take FILE puts FILE's\n" +
			"content at the name (a merge you made by hand) and removes the copy. The choice is recorded\n" +
			"as a new version that every device receives; what it replaces stays in history\n" +
			"(`weft history`, `weft restore`).",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (req.Keep == "") == (req.Take == "") {
				return exitUsage{errors.New("say what to keep: --keep winner|copy|both, or --take FILE")}
			}
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			req.Path = abs
			if req.Take != "" {
				if req.Take, err = filepath.Abs(req.Take); err != nil {
					return err
				}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			var res api.ResolveResult
			if err := cl.post("/v1/resolve", req, &res); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			printResolve(cmd.OutOrStdout(), res)
			return nil
		},
	}
	c.Flags().StringVar(&req.Keep, "keep", "", "winner (remove the copy), copy (its content takes the name) or both (the copy becomes an ordinary file)")
	c.Flags().StringVar(&req.Take, "take", "", "a file whose content becomes the result at the name; the copy is removed")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md)")
	return c
}

// printResolve says what a resolution did.
func printResolve(w io.Writer, r api.ResolveResult) {
	copyPath := filepath.Join(r.Folder, filepath.FromSlash(r.Copy))
	of := filepath.Join(r.Folder, filepath.FromSlash(r.Of))
	switch r.Kept {
	case "winner":
		fmt.Fprintf(w, "Kept %s as it is; removed %s.\n", of, copyPath)
	case "copy":
		fmt.Fprintf(w, "Put the copy's content at %s; removed %s.\n", of, copyPath)
	case "both":
		fmt.Fprintf(w, "Kept both: %s is now %s.\n", copyPath, filepath.Join(r.Folder, filepath.FromSlash(r.Renamed)))
	case "file":
		fmt.Fprintf(w, "Put the file's content at %s; removed %s.\n", of, copyPath)
	}
	if r.Held {
		fmt.Fprintln(w, "This device may not record changes yet (its own log is being confirmed): the folder is changed, and every device receives it once it may (`weft status`).")
	}
}
