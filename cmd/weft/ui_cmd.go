package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
)

// uiCmd logs a browser in to the agent's web UI (docs/ui.md).
func uiCmd(g *globals) *cobra.Command {
	var printOnly bool
	c := &cobra.Command{
		Use:   "ui [--print-url]",
		Short: "Open the web UI in a browser (needs `weft up` running)",
		Long: "Asks the running agent for a one-time login link (good once, for two minutes), prints it and\n" +
			"opens it in the default browser where there is one. The link starts a session; the API's\n" +
			"token never appears in it. --print-url only prints it.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var l api.UILogin
			if err := cl.post("/v1/ui/login", struct{}{}, &l); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), l.URL)
			if !printOnly {
				if err := openBrowser(l.URL); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "weft: no browser opened (%v); open the link above within two minutes\n", err)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&printOnly, "print-url", false, "only print the one-time login link")
	return c
}

// openBrowser opens url in the desktop's default browser, where there is
// a desktop.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return fmt.Errorf("no display")
		}
		cmd = exec.Command("xdg-open", url)
	}
	return cmd.Start() // the opener runs on after `weft ui` exits
}
