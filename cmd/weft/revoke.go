package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
)

// revokeCmd revokes a device of a vault (docs/security.md, "Revocation").
func revokeCmd(g *globals) *cobra.Command {
	var req api.RevokeRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "revoke DEVICE [--vault ID]",
		Short: "Revoke a device: it is refused from now on and cannot read anything written afterwards (admin devices only; needs `weft up` running)",
		Long: "DEVICE is a peer ID as `weft devices` prints it, or a prefix of one that names a single\n" +
			"member. The revocation is recorded in the vault's signed membership and starts a new key\n" +
			"epoch whose secret reaches every remaining device; every device and relay refuses the\n" +
			"revoked one once the record reaches it, and entries it signs later are rejected everywhere.\n" +
			"It keeps what it already had: nothing written before the revocation is re-encrypted.",
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Device = args[0]
			cl, err := g.client()
			if err != nil {
				return err
			}
			var res api.RevokeResult
			if err := cl.post("/v1/revoke", req, &res); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s from %s\nkey epoch %d starts now; its entries after #%d are refused everywhere\n",
				res.Device, res.Folder, res.Epoch, res.Upto)
			return nil
		},
	}
	c.Flags().StringVar(&req.Vault, "vault", "", "the vault (hex ID or prefix) when this device has several")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md)")
	return c
}
