package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/relay"
)

// relayScrubCmd is `weft relay scrub`: re-verify every chunk of every vault
// a relay stores, now, and wait for the result. A running relay holds the
// locks of its stores, so it is asked over its --metrics address (POST
// /admin/scrub); a stopped relay's home is opened directly.
func relayScrubCmd(g *globals) *cobra.Command {
	var admin adminFlags
	var asJSON bool
	var chunks chunkFlags
	c := &cobra.Command{
		Use:   "scrub",
		Short: "Re-verify every chunk a relay stores now, and wait for the result",
		Long: `Re-verify every chunk of every vault the relay stores against its CID, now,
and print what was found; the pieces that list a large file's chunks are
stored and verified like chunks (and counted among them). A corrupt chunk or
piece is quarantined: the relay stops serving it and counting its entries as
held (the authors' devices show them unsafe again) and fetches it again from
the vault's devices.

A running relay is asked through its metrics address: pass the address given
to its --metrics flag, e.g. --metrics 127.0.0.1:9100. Without --metrics the
relay's home (--home) is opened directly, which works only while the relay
is stopped; it then fetches what was quarantined when it starts.

The relay also scrubs by itself in the background (see --scrub-period).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rep relay.ScrubReport
			var err error
			if admin.metrics != "" {
				rep, err = askScrub(cmd.Context(), admin)
			} else {
				var dir string
				if dir, err = g.relayHome(); err != nil {
					return err
				}
				stores, serr := chunks.stores(cmd.Context())
				if serr != nil {
					return serr
				}
				rep, err = relay.ScrubHome(cmd.Context(), dir, stores, g.logger())
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, rep); err != nil {
					return err
				}
			} else {
				printScrub(out, rep, admin.metrics != "")
			}
			return rep.Err()
		},
	}
	admin.register(c.Flags())
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	chunks.register(c.Flags())
	return c
}

// askScrub asks the relay serving metrics at addr for a scrub and waits
// for its report.
func askScrub(ctx context.Context, f adminFlags) (relay.ScrubReport, error) {
	var ans struct {
		relay.ScrubReport
		Error string `json:"error"`
	}
	// No timeout: a scrub of a large relay takes long.
	status, body, err := f.ask(ctx, http.MethodPost, "/admin/scrub")
	if err != nil {
		return ans.ScrubReport, err
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return ans.ScrubReport, fmt.Errorf("relay at %s answered %d: %s", f.metrics, status, strings.TrimSpace(string(body)))
	}
	if ans.Error != "" && len(ans.Vaults) == 0 {
		return ans.ScrubReport, errors.New("relay: " + ans.Error)
	}
	return ans.ScrubReport, nil
}

func printScrub(w io.Writer, rep relay.ScrubReport, running bool) {
	if len(rep.Vaults) == 0 {
		fmt.Fprintln(w, "No vaults stored.")
		return
	}
	corrupt := 0
	for _, v := range rep.Vaults {
		fmt.Fprintf(w, "vault %s: verified %d chunks (%s), %d corrupt\n", v.Vault, v.Chunks, doctor.HumanSize(v.Bytes), len(v.Corrupt))
		for _, c := range v.Corrupt {
			fmt.Fprintf(w, "  quarantined %s\n", c)
		}
		if v.Error != "" {
			fmt.Fprintf(w, "  stopped: %s\n", v.Error)
		}
		corrupt += len(v.Corrupt)
	}
	switch {
	case corrupt > 0 && running:
		fmt.Fprintf(w, "%d corrupt chunks quarantined in %.1fs; the relay is fetching them again from the vaults' devices.\n", corrupt, rep.Seconds)
	case corrupt > 0:
		fmt.Fprintf(w, "%d corrupt chunks quarantined in %.1fs; the relay fetches them again from the vaults' devices when it starts.\n", corrupt, rep.Seconds)
	default:
		fmt.Fprintf(w, "Every chunk checks out (%.1fs).\n", rep.Seconds)
	}
}
