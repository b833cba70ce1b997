package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/weftsync/weft/protocol/keys"
)

func recoverCmd(g *globals) *cobra.Command {
	var from, nameArg string
	c := &cobra.Command{
		Use:   "recover FOLDER --from ADDR",
		Short: "Get a vault back with its recovery phrase, as an admin, and sync it into FOLDER",
		Long: `Recover reads the vault's 24-word recovery phrase (typed at the terminal,
hidden, or piped on standard input; never a flag, which would stay in the
shell's history), reaches --from (the vault's relay, or any device of the
vault that is running, as a multiaddr ending in /p2p/ID), and admits this
device as an admin of the vault: no other device has to be online. The
next (or running) ` + "`weft up`" + ` syncs the folder, every key epoch included;
` + "`weft revoke`" + ` then removes a lost device. Only vaults made since
recovery existed can be recovered (docs/security.md, "Recovery").`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return exitUsage{errors.New("--from is required: the relay's or a running device's multiaddr ending in /p2p/ID (`weft relay` prints its own; `weft status` on a device lists its addresses, each on a line of its own)")}
			}
			h, err := g.openHome()
			if err != nil {
				return err
			}
			name, err := deviceName(nameArg)
			if err != nil {
				return err
			}
			root, err := readPhrase(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			hv, err := enrol.RecoverVault(cmd.Context(), h, root, args[0], from, name, time.Now())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			running, err := g.loadInAgent()
			switch {
			case err != nil:
				return fmt.Errorf("recovered vault %s, but the running agent could not start it (restart `weft up`): %w", hv.IDHex[:16], err)
			case running:
				fmt.Fprintf(out, "Recovered vault %s as an admin; the running agent is syncing it into %s now.\n", hv.IDHex[:16], hv.Folder)
			default:
				fmt.Fprintf(out, "Recovered vault %s as an admin; it syncs into %s with the next `weft up`.\n", hv.IDHex[:16], hv.Folder)
			}
			fmt.Fprintln(out, "Revoke a lost device with `weft revoke DEVICE` (`weft devices` lists them).")
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "the vault's relay or a running device of it: a multiaddr ending in /p2p/ID")
	nameFlag(c, &nameArg)
	return c
}

// readPhrase reads a recovery phrase: hidden from a terminal, or the whole
// of a piped standard input (words on one line or several).
func readPhrase(in io.Reader, prompt io.Writer) (keys.RootSecret, error) {
	var text string
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "Recovery phrase (24 words; not shown as you type): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return keys.RootSecret{}, fmt.Errorf("reading the recovery phrase: %w", err)
		}
		text = string(b)
	} else {
		b, err := io.ReadAll(bufio.NewReader(io.LimitReader(in, 64<<10)))
		if err != nil {
			return keys.RootSecret{}, fmt.Errorf("reading the recovery phrase from standard input: %w", err)
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		return keys.RootSecret{}, errors.New("no recovery phrase given: type it, or pipe it on standard input")
	}
	root, err := keys.ParsePhrase(text)
	if err != nil {
		return keys.RootSecret{}, fmt.Errorf("recovery phrase: %w", err)
	}
	return root, nil
}
