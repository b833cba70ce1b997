package main

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/member"
)

// nameFlag adds --name to c: this device's name in the vault, signed into
// its membership and shown by status, devices, history and events on every
// device (docs/pairing.md, "Device names"). The default is the host name.
func nameFlag(c *cobra.Command, name *string) {
	c.Flags().StringVar(name, "name", "", "this device's name in the vault (default: the host name; 1 to 64 bytes)")
}

// deviceName is --name, checked, or else the host name cut to a valid
// name ("" when the host has none that can be).
func deviceName(flag string) (string, error) {
	if flag != "" {
		if err := member.CheckName(flag); err != nil {
			return "", exitUsage{err}
		}
		return flag, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", nil
	}
	host = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, host))
	for len(host) > member.MaxNameLen {
		_, size := utf8.DecodeLastRuneInString(host)
		host = strings.TrimSpace(host[:len(host)-size])
	}
	if member.CheckName(host) != nil {
		return "", nil
	}
	return host, nil
}

// orDash is s, or "-" for a device without a name.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// renameCmd records a device's new name in the vault's membership.
func renameCmd(g *globals) *cobra.Command {
	var req api.RenameRequest
	c := &cobra.Command{
		Use:   "rename [DEVICE] NAME [--vault ID]",
		Short: "Rename this device (or, on an admin device, any member) in the vault's membership",
		Args:  usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Name = args[len(args)-1]
			if len(args) == 2 {
				req.Device = args[0]
			}
			if err := member.CheckName(req.Name); err != nil {
				return exitUsage{err}
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			var d api.Device
			if err := cl.post("/v1/devices/rename", req, &d); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is now named %q in %s\n", d.ID, d.Name, d.Folder)
			return nil
		},
	}
	c.Flags().StringVar(&req.Vault, "vault", "", "the vault (hex ID or prefix) when this device has several")
	return c
}
