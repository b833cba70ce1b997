package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/pack"
)

// relayCmd runs a relay (`weft relay`) and manages a vault's relays from a
// device (`weft relay add|remove|list`).
func relayCmd(g *globals) *cobra.Command {
	var listen, allow []string
	var quotaBytes string
	var quotaEntries uint64
	var noQuota bool
	var maxVaults int
	var metrics, metricsTokenFile, pprofAddr string
	var keepAll, keepDaily time.Duration
	var scrubPeriod time.Duration
	var cpuprofile, memprofile string
	var chunks chunkFlags
	var ratePerVault, rateTotal string
	c := &cobra.Command{
		Use:   "relay",
		Short: "Run a relay: an always-on store-and-forward node for vaults that list it",
		Long: `Run a relay in the foreground. It prints its multiaddrs (with its peer ID);
record one in a vault with ` + "`weft relay add MULTIADDR`" + ` on an admin device, or
` + "`weft init FOLDER --relay MULTIADDR`" + `. The relay holds no vault key: it stores
signed entries and encrypted chunks, and serves them to the vault's members.

Its home (--home, else $WEFT_RELAY_HOME, else relay/ in the user config
directory) holds its key and the replicas; it must not be a device's home.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.relayHome()
			if err != nil {
				return err
			}
			cfg := relay.Config{Home: dir, ListenAddrs: listen, NoQuota: noQuota, MaxVaults: maxVaults, Logger: g.logger()}
			if keepAll < 0 || keepDaily < 0 {
				return exitUsage{errors.New("--keep-all and --keep-daily cannot be negative")}
			}
			cfg.Retention = relay.Retention{KeepAll: offIfZero(keepAll), Daily: offIfZero(keepDaily)}
			if scrubPeriod < 0 {
				return exitUsage{errors.New("--scrub-period cannot be negative")}
			}
			cfg.Scrub.Period = scrubPeriod
			cfg.NoScrub = scrubPeriod == 0
			if quotaBytes != "" {
				n, err := parseSize(quotaBytes)
				if err != nil {
					return exitUsage{fmt.Errorf("--quota-bytes: %w", err)}
				}
				cfg.Quota.Bytes = n
			}
			cfg.Quota.Entries = quotaEntries
			for _, r := range []struct {
				flag, val string
				to        *int64
			}{{"--rate-per-vault", ratePerVault, &cfg.Rates.PerVault}, {"--rate-total", rateTotal, &cfg.Rates.Total}} {
				if r.val == "" {
					continue
				}
				n, err := parseSize(strings.TrimSuffix(r.val, "/s"))
				if err != nil || n == 0 || n > 1<<40 {
					return exitUsage{fmt.Errorf("%s %q: want a rate such as 10MiB (per second)", r.flag, r.val)}
				}
				*r.to = int64(n)
			}
			if cfg.Quota != (relay.Quota{}) {
				if cfg.Quota.Bytes == 0 {
					cfg.Quota.Bytes = relay.DefaultQuota.Bytes
				}
				if cfg.Quota.Entries == 0 {
					cfg.Quota.Entries = relay.DefaultQuota.Entries
				}
			}
			for _, a := range allow {
				id, err := keys.ParseVaultID(a)
				if err != nil {
					return exitUsage{fmt.Errorf("--allow %q: %w", a, err)}
				}
				cfg.Allow = append(cfg.Allow, id)
			}
			if cfg.Chunks, err = chunks.stores(cmd.Context()); err != nil {
				return err
			}
			stop, err := startProfiles(cpuprofile, memprofile)
			if err != nil {
				return err
			}
			defer stop()
			r, err := relay.New(cfg)
			if err != nil {
				return err
			}
			errc := make(chan error, 1)
			go func() { errc <- r.Run(cmd.Context()) }()
			extra := ""
			if metrics != "" {
				token, err := readToken(metricsTokenFile)
				if err != nil {
					return exitUsage{err}
				}
				addr, err := r.ServeMetrics(cmd.Context(), metrics, token)
				if err != nil {
					return err
				}
				extra = " metrics=http://" + addr.String() + "/metrics"
			} else if metricsTokenFile != "" {
				return exitUsage{errors.New("--metrics-token-file needs --metrics")}
			}
			if pprofAddr != "" {
				addr, err := r.ServePprof(cmd.Context(), pprofAddr)
				if err != nil {
					return err
				}
				extra += " pprof=http://" + addr.String() + "/debug/pprof/"
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "ready relay=%s listen=%s%s\n", r.ID(), strings.Join(r.Addrs(), ","), extra)
			for _, a := range r.Addrs() {
				fmt.Fprintf(out, "  %s\n", a)
			}
			return <-errc
		},
	}
	c.Flags().StringArrayVar(&listen, "listen", nil, "listen multiaddr (repeatable; default TCP and QUIC on port 4001, every interface)")
	c.Flags().StringVar(&quotaBytes, "quota-bytes", "", "per-vault limit on stored chunk bytes, e.g. 20GiB (default 20GiB)")
	c.Flags().Uint64Var(&quotaEntries, "quota-entries", 0, "per-vault limit on stored log entries (default 2000000)")
	c.Flags().BoolVar(&noQuota, "no-quota", false, "no per-vault quota")
	c.Flags().StringArrayVar(&allow, "allow", nil, "serve only this vault ID (repeatable; default any vault that lists this relay)")
	c.Flags().IntVar(&maxVaults, "max-vaults", 0, "most vaults served (default 100)")
	c.Flags().DurationVar(&keepAll, "keep-all", relay.DefaultRetention.KeepAll, "keep every version for this long after it was superseded (0: none)")
	c.Flags().DurationVar(&keepDaily, "keep-daily", relay.DefaultRetention.Daily, "then keep one version a day per file until this long after it was superseded (0: none)")
	c.Flags().DurationVar(&scrubPeriod, "scrub-period", pack.DefaultScrubPeriod, "re-verify every stored chunk once in this long, at most one minute of work per hour (0: no background scrub)")
	c.Flags().StringVar(&metrics, "metrics", "", "serve Prometheus /metrics and the operator's routes (for `weft relay scrub`, `vaults` and `drop`) on this address, e.g. 127.0.0.1:9100")
	c.Flags().StringVar(&metricsTokenFile, "metrics-token-file", "", "require the bearer token in this file (mode 0600) of every request to --metrics")
	c.Flags().StringVar(&pprofAddr, "pprof", "", "serve Go's profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (never a public one)")
	chunks.register(c.Flags())
	c.Flags().StringVar(&ratePerVault, "rate-per-vault", "", "most bytes per second each vault's streams move, each way, e.g. 10MiB (default: no limit)")
	c.Flags().StringVar(&rateTotal, "rate-total", "", "most bytes per second all vaults' streams move together, each way, e.g. 50MiB (default: no limit)")
	c.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile to this file (for benchmarks)")
	c.Flags().StringVar(&memprofile, "memprofile", "", "write a heap profile to this file at shutdown (for benchmarks)")
	_ = c.Flags().MarkHidden("cpuprofile")
	_ = c.Flags().MarkHidden("memprofile")
	c.AddCommand(relayAddCmd(g, false), relayAddCmd(g, true), relayListCmd(g), relayScrubCmd(g), relayVaultsCmd(g), relayDropCmd(g), serviceCmd(g, true))
	return c
}

// offIfZero maps a retention flag of 0 ("none") to relay.Retention's
// "off" (negative): a zero field would mean the default.
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// relayHome is the relay's home directory.
func (g *globals) relayHome() (string, error) {
	dir := g.home
	if dir == "" {
		dir = os.Getenv("WEFT_RELAY_HOME")
	}
	if dir == "" {
		d, err := home.DefaultDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(d, "relay")
	}
	h, err := home.Open(dir)
	if err != nil {
		return "", err
	}
	if vs, err := h.Vaults(); err == nil && len(vs) > 0 {
		return "", fmt.Errorf("%s is a device's home (it syncs %s); give the relay its own --home", dir, vs[0].Folder)
	}
	return h.Dir, nil
}

func relayAddCmd(g *globals, remove bool) *cobra.Command {
	var vault string
	use, short := "add MULTIADDR", "Record a relay in the vault's membership (admin devices only)"
	if remove {
		use, short = "remove MULTIADDR|PEERID", "Remove a relay from the vault's membership (admin devices only)"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr := strings.TrimSpace(args[0])
			if !remove {
				if _, _, err := relay.ParseAddr(addr); err != nil {
					return exitUsage{err}
				}
			}
			h, err := g.openHome()
			if err != nil {
				return err
			}
			var list []string
			if cl, err := g.client(); err == nil {
				var infos []api.RelayInfo
				if err := cl.post("/v1/relays", map[string]any{"vault": vault, "addr": addr, "remove": remove}, &infos); err != nil {
					return err
				}
				for _, ri := range infos {
					list = append(list, ri.Addr)
				}
			} else if errors.Is(err, home.ErrNoAgent) {
				if list, err = enrol.ChangeRelays(h, vault, addr, remove, time.Now()); err != nil {
					return err
				}
			} else {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Relays of the vault (%d):\n", len(list))
			for _, a := range list {
				fmt.Fprintf(out, "  %s\n", a)
			}
			return nil
		},
	}
	c.Flags().StringVar(&vault, "vault", "", "vault ID (needed when the device has several)")
	return c
}

func relayListCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the vaults' relays and what each holds (needs a running agent)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var infos []api.RelayInfo
			if err := cl.get("/v1/relays", &infos); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, infos)
			}
			if len(infos) == 0 {
				fmt.Fprintln(out, "No relays. Add one with `weft relay add MULTIADDR`.")
			}
			for _, ri := range infos {
				state := "offline"
				if ri.Connected {
					state = "connected"
				}
				fmt.Fprintf(out, "%s  %s  holds %d of this device's entries\n", ri.Addr, state, ri.Holds)
				switch {
				case ri.Error != "":
					fmt.Fprintf(out, "  refused: %s\n", ri.Error)
				case ri.Quota != nil:
					q := ri.Quota
					fmt.Fprintf(out, "  stores %s (limit %s), %d entries (limit %d)", doctor.HumanSize(int64(q.Bytes)), limitText(q.BytesLimit, true), q.Entries, q.EntriesLimit)
					if q.Full {
						fmt.Fprint(out, "  QUOTA REACHED: it takes nothing new for this vault")
					}
					fmt.Fprintln(out)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func limitText(n uint64, bytes bool) string {
	if n == 0 {
		return "none"
	}
	if bytes {
		return doctor.HumanSize(int64(n))
	}
	return strconv.FormatUint(n, 10)
}

// parseSize parses "20GiB", "500MB", "1048576".
func parseSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("size %q", s)
			}
			return uint64(n * float64(u.mult)), nil
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
	}
	return n, nil
}

// startProfiles starts a CPU profile into cpu and arranges a heap profile
// into mem, either may be empty; stop ends both (the heap profile is taken
// then, after a garbage collection, so it shows what is live).
func startProfiles(cpu, mem string) (stop func(), err error) {
	var cf *os.File
	if cpu != "" {
		if cf, err = os.Create(cpu); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			return nil, err
		}
	}
	return func() {
		if cf != nil {
			pprof.StopCPUProfile()
			cf.Close()
		}
		if mem != "" {
			if f, err := os.Create(mem); err == nil {
				runtime.GC()
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}, nil
}
