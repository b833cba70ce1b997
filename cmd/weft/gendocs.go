package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// genDocsCmd writes man pages (section 1, one per command) and the bash,
// zsh, fish and PowerShell completion scripts, all generated from the
// commands themselves so that they cannot drift from --help. `make man`
// runs it and the release archives carry its output. Hidden: it is a
// build step, not something a user needs.
func genDocsCmd(root *cobra.Command) *cobra.Command {
	var man, comp string
	c := &cobra.Command{
		Use:    "gendocs --man DIR --completions DIR",
		Short:  "Write man pages and shell completions (a build step: make man)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if man == "" && comp == "" {
				return exitUsage{fmt.Errorf("give --man DIR, --completions DIR or both")}
			}
			if man != "" {
				if err := os.MkdirAll(man, 0o755); err != nil {
					return fmt.Errorf("man pages: %w", err)
				}
				hdr := &doc.GenManHeader{Title: "WEFT", Section: "1", Source: "weft " + buildVersion().Version, Manual: "weft manual"}
				root.DisableAutoGenTag = true
				if err := doc.GenManTree(root, hdr, man); err != nil {
					return fmt.Errorf("man pages in %s: %w", man, err)
				}
			}
			if comp != "" {
				return writeCompletions(root, comp)
			}
			return nil
		},
	}
	c.Flags().StringVar(&man, "man", "", "directory for the man pages (weft.1, weft-up.1, ...)")
	c.Flags().StringVar(&comp, "completions", "", "directory for weft.bash, _weft (zsh), weft.fish and weft.ps1")
	return c
}

// writeCompletions writes one completion script per shell into dir, under
// the names each shell's packaging conventions expect.
func writeCompletions(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("completions: %w", err)
	}
	for name, gen := range map[string]func(string) error{
		"weft.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
		"_weft":     root.GenZshCompletionFile,
		"weft.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
		"weft.ps1":  root.GenPowerShellCompletionFileWithDesc,
	} {
		if err := gen(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("completion %s: %w", name, err)
		}
	}
	return nil
}
