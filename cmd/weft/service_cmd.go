package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/internal/service"
)

// serviceCmd is `weft service` (the agent, `weft up`) or, with relay set,
// `weft relay service`: install, uninstall and status of a service of the
// OS's own manager (internal/service, docs/operations.md).
func serviceCmd(g *globals, relay bool) *cobra.Command {
	what, name, runs := "the agent (weft up)", "weft", "weft up"
	if relay {
		what, name, runs = "the relay", "weft-relay", "weft relay"
	}
	c := &cobra.Command{
		Use:   "service",
		Short: "Run " + what + " as a service: systemd user unit, launchd agent or Windows service",
		Long: `Install, remove or inspect a service that runs ` + what + ` for this home,
starts at login (systemd, launchd) or boot (Windows) and restarts it when it
fails: a systemd user unit on Linux (logs in the journal), a launchd agent
on macOS (logs in ~/Library/Logs/weft), a Windows service (needs an
elevated prompt; logs in %ProgramData%\weft\logs).`,
	}
	var noStart bool
	install := &cobra.Command{
		Use:   "install [-- FLAGS...]",
		Short: "Install and start the service for this home; flags after -- go to " + runs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return exitUsage{fmt.Errorf("unexpected argument %q: flags for %s go after --\nusage: %s", args[0], runs, cmd.UseLine())}
			}
			if err := checkPassedFlags(relay, args); err != nil {
				return err
			}
			spec, err := serviceSpec(g, relay, name, args)
			if err != nil {
				return err
			}
			inst, err := service.Default()
			if err != nil {
				return err
			}
			in, err := inst.Install(spec, !noStart)
			out := cmd.OutOrStdout()
			if in.Path != "" {
				fmt.Fprintf(out, "wrote %s\n", in.Path)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "runs: %s\n", commandText(spec.Exe, spec.Args))
			if in.Started {
				fmt.Fprintf(out, "started %s\n", name)
			}
			if strings.HasPrefix(spec.Exe, filepath.Clean(os.TempDir())+string(filepath.Separator)) {
				in.Notes = append(in.Notes, "the binary is in a temporary directory (go run?): install a built one, or the service will not find it later")
			}
			for _, n := range in.Notes {
				fmt.Fprintln(out, n)
			}
			return nil
		},
	}
	install.Flags().BoolVar(&noStart, "no-start", false, "write the service but do not enable or start it")
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove the service",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			inst, err := service.Default()
			if err != nil {
				return err
			}
			rm, err := inst.Uninstall(name)
			if err != nil {
				return err
			}
			where := ""
			if rm.Path != "" {
				where = " (" + rm.Path + ")"
			}
			if !rm.Removed {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is not installed%s; nothing removed\n", name, where)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s%s\n", name, where)
			return nil
		},
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the service is installed and what its manager says of it",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			inst, err := service.Default()
			if err != nil {
				return err
			}
			st, err := inst.Status(name)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), st)
			}
			out := cmd.OutOrStdout()
			if !st.Installed {
				fmt.Fprintf(out, "%s: not installed (%s)\n", name, st.Manager)
				return nil
			}
			where := st.Manager
			if st.Path != "" {
				where += ", " + st.Path
			}
			fmt.Fprintf(out, "%s: installed (%s), %s\n", name, where, st.State)
			if st.Error != "" {
				fmt.Fprintln(out, "  "+st.Error)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, `print JSON: {"name", "manager", "path", "installed", "state", "error"}`)
	c.AddCommand(install, uninstall, status)
	return c
}

// serviceSpec is the service for this home: the running binary with the
// home resolved to an absolute path, so that the service uses the home it
// was installed for whatever its environment ($WEFT_HOME is not set
// there).
//
// The binary's path is os.Executable's, deliberately without resolving
// symlinks: on Linux it is resolved already (/proc/self/exe), and on
// macOS a package manager's link (/opt/homebrew/bin/weft) survives an
// upgrade where the versioned path it points into does not.
func serviceSpec(g *globals, relay bool, name string, extra []string) (service.Spec, error) {
	exe, err := os.Executable()
	if err != nil {
		return service.Spec{}, fmt.Errorf("finding the weft binary: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return service.Spec{}, fmt.Errorf("finding the weft binary: %w", err)
	}
	s := service.Spec{Name: name, Exe: exe}
	if relay {
		dir, err := g.relayHome()
		if err != nil {
			return service.Spec{}, err
		}
		s.Description = "weft relay (home " + dir + ")"
		s.Documentation = "man:weft-relay(1)"
		s.Args = append([]string{"relay", "--home", dir}, extra...)
		return s, nil
	}
	h, err := g.openHome()
	if err != nil {
		return service.Spec{}, err
	}
	s.Description = "weft agent (home " + h.Dir + ")"
	s.Documentation = "man:weft-up(1)"
	s.Args = append([]string{"--home", h.Dir, "up", "--quiet"}, extra...)
	return s, nil
}

// commandText shows a command line for the user, quoting the words that
// hold white space or quotes.
func commandText(exe string, args []string) string {
	words := make([]string, 0, 1+len(args))
	for _, w := range append([]string{exe}, args...) {
		if w == "" || strings.ContainsAny(w, " \t\n\"'") {
			w = strconv.Quote(w)
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// checkPassedFlags rejects, before anything is written, flags after --
// that `weft up` (or `weft relay`) would refuse when the service starts.
func checkPassedFlags(relay bool, args []string) error {
	if len(args) == 0 {
		return nil
	}
	target := upCmd(&globals{})
	if relay {
		target = relayCmd(&globals{})
	}
	if err := target.ParseFlags(args); err != nil {
		return exitUsage{fmt.Errorf("flags for %s: %w", target.Name(), err)}
	}
	if rest := target.Flags().Args(); len(rest) > 0 {
		return exitUsage{fmt.Errorf("flags for %s: unexpected argument %q (give flags only, after --)", target.Name(), rest[0])}
	}
	return nil
}
