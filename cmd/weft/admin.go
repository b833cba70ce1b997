package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
)

// adminCmd makes members admins and back (docs/pairing.md, "Admins").
func adminCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "admin",
		Short: "Make a device an admin of its vault, or a member again (admin devices only; needs `weft up` running)",
	}
	c.AddCommand(roleCmd(g, true), roleCmd(g, false))
	return c
}

func roleCmd(g *globals, admin bool) *cobra.Command {
	var req api.RoleRequest
	use, short := "add DEVICE [--vault ID]", "Make DEVICE an admin: it can invite, revoke and change the vault's settings"
	if !admin {
		use, short = "remove DEVICE [--vault ID]", "Make DEVICE a member again; the vault's last admin cannot"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Device, req.Admin = args[0], admin
			cl, err := g.client()
			if err != nil {
				return err
			}
			var d api.Device
			if err := cl.post("/v1/admins", req, &d); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is now %s of %s\n", d.ID, article(d.Role), d.Folder)
			return nil
		},
	}
	c.Flags().StringVar(&req.Vault, "vault", "", "the vault (hex ID or prefix) when this device has several")
	return c
}

func article(role string) string {
	if role == "admin" {
		return "an admin"
	}
	return "a " + role
}

// settingsCmd shows and changes a vault's settings.
func settingsCmd(g *globals) *cobra.Command {
	var vault, membersInvite string
	var asJSON bool
	c := &cobra.Command{
		Use:   "settings [--vault ID] [--members-invite on|off]",
		Short: "Show each vault's settings, or change one (admin devices only; needs `weft up` running)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var all []api.VaultSettings
			if membersInvite != "" {
				on := membersInvite == "on"
				if !on && membersInvite != "off" {
					return exitUsage{fmt.Errorf("--members-invite: want on or off, got %q", membersInvite)}
				}
				var s api.VaultSettings
				if err := cl.post("/v1/settings", api.SettingsRequest{Vault: vault, MembersInvite: &on}, &s); err != nil {
					return err
				}
				all = []api.VaultSettings{s}
			} else if err := cl.get("/v1/settings", &all); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, all)
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FOLDER\tRECOVERABLE\tMEMBERS INVITE\t")
			for _, s := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t\n", s.Folder, onOff(s.Recoverable), onOff(s.MembersInvite))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&vault, "vault", "", "the vault (hex ID or prefix) when this device has several")
	c.Flags().StringVar(&membersInvite, "members-invite", "", "on: every member may invite devices (as members); off (the default): only admins")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{\"folder\", \"vault\", \"recoverable\", \"members_invite\"}]")
	return c
}

func onOff(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
