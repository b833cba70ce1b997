// Command weft keeps a folder identical on all of a person's or a team's
// devices, peer to peer and end-to-end encrypted.
//
// Exit codes: 0 success; 1 failure (the message says why); 2 bad usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/internal/service"
	"github.com/weftsync/weft/store/home"
)

// exitUsage marks errors caused by how the command was called.
type exitUsage struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	// Under the Windows service manager, service.Run answers it and
	// cancels ctx on Stop; elsewhere it just runs the command.
	err := service.Run(ctx, serviceName(root, os.Args[1:]), root.ExecuteContext)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		var u exitUsage
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// serviceName is the name `weft service install` gives the service that
// runs args: weft-relay for the relay, weft otherwise. Only Windows uses
// it, to name the service's log file.
func serviceName(root *cobra.Command, args []string) string {
	if c, _, err := root.Find(args); err == nil && c.Name() == "relay" && c.Parent() == root {
		return "weft-relay"
	}
	return "weft"
}

// globals are the flags every command shares.
type globals struct {
	home  string
	debug bool
}

func (g *globals) openHome() (*home.Home, error) {
	dir := g.home
	if dir == "" {
		dir = os.Getenv("WEFT_HOME")
	}
	if dir == "" {
		d, err := home.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return home.Open(dir)
}

func (g *globals) logger() *slog.Logger {
	level := slog.LevelInfo
	if g.debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "weft",
		Short:         "Keep a folder identical on all your devices, peer to peer, end-to-end encrypted",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.home, "home", "", "weft home directory (default $WEFT_HOME, else weft/ in the user config directory)")
	root.PersistentFlags().BoolVar(&g.debug, "debug", false, "log at debug level")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return exitUsage{err} })
	root.AddCommand(
		initCmd(g), upCmd(g), inviteCmd(g), joinCmd(g), recoverCmd(g), adminCmd(g), settingsCmd(g), statusCmd(g),
		conflictsCmd(g), resolveCmd(g), uiCmd(g), devicesCmd(g), scanCmd(g), versionCmd(), demoCmd(g),
	)
	root.AddCommand(eventsCmd(g), doctorCmd(g))
	root.AddCommand(historyCmd(g), restoreCmd(g), revokeCmd(g), deletionsCmd(g), folderCmd(g), scrubCmd(g))
	root.AddCommand(benchCmd(g), simCmd(g), relayCmd(g), serviceCmd(g, false))
	root.AddCommand(genDocsCmd(root))
	return root
}
