package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/relay"
)

// relayVaultsCmd is `weft relay vaults`: what a relay stores for each
// vault, for an operator serving many.
func relayVaultsCmd(g *globals) *cobra.Command {
	var admin adminFlags
	var asJSON bool
	var chunks chunkFlags
	c := &cobra.Command{
		Use:   "vaults",
		Short: "List the vaults a relay serves: bytes, entries, devices, last activity, quota",
		Long: `List every vault a relay stores: the encrypted bytes stored and on disk
(or in object storage), chunks, log entries, devices enrolled, the last time
it stored or served anything for the vault, and its quota.

A running relay is asked through its metrics address (--metrics, as given to
the relay). Without --metrics the relay's home (--home) is opened directly,
which works only while the relay is stopped (give its --chunks flags when
its chunks are in object storage); a stopped relay shows no quota, which is
a flag of the running relay.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var vs []relay.VaultInfo
			var err error
			if admin.metrics != "" {
				vs, err = askVaults(cmd.Context(), admin)
			} else {
				var dir string
				if dir, err = g.relayHome(); err != nil {
					return err
				}
				stores, serr := chunks.stores(cmd.Context())
				if serr != nil {
					return serr
				}
				vs, err = relay.VaultsInHome(cmd.Context(), dir, relay.Quota{}, stores, g.logger())
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if vs == nil {
					vs = []relay.VaultInfo{}
				}
				return writeJSON(out, vs)
			}
			printVaults(out, vs, time.Now())
			return nil
		},
	}
	admin.register(c.Flags())
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: a list of {vault, bytes_stored, bytes_on_disk, chunks, entries, devices, last_activity, quota_bytes, quota_entries, quota_full, chunks_wanted}")
	chunks.register(c.Flags())
	return c
}

// askVaults asks a running relay for its vaults (GET /admin/vaults).
func askVaults(ctx context.Context, f adminFlags) ([]relay.VaultInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	status, body, err := f.ask(ctx, http.MethodGet, "/admin/vaults")
	if err != nil {
		return nil, err
	}
	var vs []relay.VaultInfo
	if status != http.StatusOK || json.Unmarshal(body, &vs) != nil {
		return nil, fmt.Errorf("relay at %s answered %d: %s", f.metrics, status, strings.TrimSpace(string(body)))
	}
	return vs, nil
}

func printVaults(w io.Writer, vs []relay.VaultInfo, now time.Time) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "No vaults stored.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VAULT\tSTORED\tON DISK\tCHUNKS\tENTRIES\tDEVICES\tLAST ACTIVITY\tQUOTA")
	for _, v := range vs {
		quota := "none"
		if v.QuotaBytes > 0 {
			quota = doctor.HumanSize(int64(v.QuotaBytes))
			if v.QuotaFull {
				quota += " (full)"
			}
		}
		last := "never"
		if !v.LastActivity.IsZero() && v.LastActivity.Unix() > 0 {
			last = now.Sub(v.LastActivity).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", v.Vault, doctor.HumanSize(v.BytesStored), doctor.HumanSize(v.BytesOnDisk),
			v.Chunks, v.Entries, v.Devices, last, quota)
	}
	_ = tw.Flush()
}
