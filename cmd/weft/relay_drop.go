package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
)

// relayDropCmd is `weft relay drop VAULT`: delete one vault's replica from
// a relay and refuse the vault from then on.
func relayDropCmd(g *globals) *cobra.Command {
	var admin adminFlags
	var chunks chunkFlags
	var yes, undo bool
	c := &cobra.Command{
		Use:   "drop VAULT",
		Short: "Delete one vault's replica from a relay, and refuse the vault from then on",
		Long: `Delete everything a relay stores for one vault: its chunks (pack files, or
objects with --chunks s3://), its logs and its index. The vault is then
refused: its devices, which still list this relay, cannot enroll it again
(they show the relay as refusing it). --undo serves the vault again; its
devices then upload what they hold.

It asks you to type the vault ID's first 8 characters unless --yes is given.
Devices keep their own copies: dropping a replica loses only the versions
no device still holds (old versions the relay kept for them).

A running relay is asked through its metrics address (--metrics); a stopped
relay's home (--home) is opened directly (give its --chunks flags when its
chunks are in object storage).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := keys.ParseVaultID(args[0])
			if err != nil {
				return exitUsage{fmt.Errorf("vault %q: %w", args[0], err)}
			}
			out := cmd.OutOrStdout()
			if !undo && !yes {
				fmt.Fprintf(out, "This deletes everything the relay stores for vault %s and refuses the vault from now on.\nType the vault ID's first 8 characters to go on: ", id)
				line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if strings.TrimSpace(line) != id.String()[:8] {
					return exitUsage{errors.New("not confirmed: nothing dropped")}
				}
			}
			if admin.metrics != "" {
				ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Minute)
				defer cancel()
				q := url.Values{"vault": {id.String()}}
				if undo {
					q.Set("undo", "1")
				}
				status, body, err := admin.ask(ctx, http.MethodPost, "/admin/drop?"+q.Encode())
				if err != nil {
					return err
				}
				if status != http.StatusOK {
					return fmt.Errorf("relay at %s: %s", admin.metrics, strings.TrimSpace(string(body)))
				}
			} else {
				dir, err := g.relayHome()
				if err != nil {
					return err
				}
				stores, err := chunks.stores(cmd.Context())
				if err != nil {
					return err
				}
				if err := relay.DropInHome(dir, id, undo, stores, g.logger()); err != nil {
					return err
				}
			}
			if undo {
				fmt.Fprintf(out, "Vault %s is served again.\n", id)
			} else {
				fmt.Fprintf(out, "Vault %s dropped.\n", id)
			}
			return nil
		},
	}
	admin.register(c.Flags())
	chunks.register(c.Flags())
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	c.Flags().BoolVar(&undo, "undo", false, "serve a dropped vault again")
	return c
}
