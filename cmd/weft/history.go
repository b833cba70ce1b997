package main

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

// historyCmd lists every version of one path (docs/history.md).
func historyCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "history PATH",
		Short: "List every version of PATH this device knows, newest first (needs `weft up` running)",
		Long: "Lists the versions of PATH recorded in the vault's signed logs: when the author says it\n" +
			"wrote each, which device, size, kind, and whether it is current, superseded or deleted.\n" +
			"History is per path: a renamed file's earlier versions are under its old name.\n" +
			"Bring a version back with `weft restore PATH --version ID`.",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			var h api.History
			if err := cl.get("/v1/history?path="+url.QueryEscape(abs), &h); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), h)
			}
			printHistory(cmd.OutOrStdout(), h)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md)")
	return c
}

// printHistory renders a history as a table, times in local time.
func printHistory(w io.Writer, h api.History) {
	fmt.Fprintf(w, "%s: %d versions, newest first\n", filepath.Join(h.Folder, filepath.FromSlash(h.Path)), len(h.Versions))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTIME\tDEVICE\tKIND\tSIZE\tCONTENT\tSTATE")
	for _, v := range h.Versions {
		dev := v.AuthorShort
		if v.AuthorName != "" {
			dev = v.AuthorName + " (" + v.AuthorShort + ")"
		}
		if v.Self {
			dev += " (this device)"
		}
		size := ""
		if v.Kind == "file" {
			size = doctor.HumanSize(int64(v.Size))
		}
		state := []string{v.State}
		if v.OnDisk {
			state = append(state, "on disk")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Time.Local().Format("2006-01-02 15:04:05"), dev, v.Kind, size, v.Content, strings.Join(state, ", "))
	}
	tw.Flush()
	fmt.Fprintln(w, "CONTENT: inline, local, versions: restorable on this device; peers, relay: asked of the connected devices or relays; none: not restorable now")
}
