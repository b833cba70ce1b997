package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/weftsync/weft/node/enrol"
	"github.com/weftsync/weft/node/members"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"

	"github.com/skip2/go-qrcode"
	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

func initCmd(g *globals) *cobra.Command {
	var relays []string
	var nameArg string
	c := &cobra.Command{
		Use:   "init FOLDER",
		Short: "Create a vault that syncs FOLDER and show its recovery phrase once",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := g.openHome()
			if err != nil {
				return err
			}
			name, err := deviceName(nameArg)
			if err != nil {
				return err
			}
			root, hv, err := enrol.InitVault(h, args[0], name, time.Now(), relays...)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Created a vault for %s\n\n", hv.Folder)
			fmt.Fprintf(out, "Recovery phrase (write it down now; it is shown only once):\n\n")
			words := strings.Fields(root.Phrase())
			for i := 0; i < len(words); i += 6 {
				fmt.Fprintf(out, "  %s\n", strings.Join(words[i:min(i+6, len(words))], " "))
			}
			running, err := g.loadInAgent()
			switch {
			case err != nil:
				return fmt.Errorf("created the vault, but the running agent could not start it (restart `weft up`): %w", err)
			case running:
				fmt.Fprintf(out, "\nThe running agent is syncing it now; add a device with `weft invite`.\n")
			default:
				fmt.Fprintf(out, "\nStart syncing with `weft up`; add a device with `weft invite`.\n")
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&relays, "relay", nil, "relay multiaddr ending in /p2p/ID to record in the vault (repeatable)")
	nameFlag(c, &nameArg)
	return c
}

func upCmd(g *globals) *cobra.Command {
	var listen []string
	var mdns, freshPorts bool
	var settle time.Duration
	var quiet bool
	var cpuprofile, memprofile string
	var bootstrap []string
	var clockOffset time.Duration
	var maxFileChunks int
	c := &cobra.Command{
		Use:   "up",
		Short: "Run the agent in the foreground, syncing every folder in the home",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := g.openHome()
			if err != nil {
				return err
			}
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			// WEFT_BOOTSTRAP adds DHT bootstrap peers, separated by commas
			// or white space (docs/connectivity.md, "DHT rendezvous").
			bootstrap = append(bootstrap, strings.Fields(strings.ReplaceAll(os.Getenv("WEFT_BOOTSTRAP"), ",", " "))...)
			// OpenInRun: the API answers (folders "opening") while a large
			// vault loads, instead of only after it.
			cfg := node.Config{Home: h, ListenAddrs: listen, FreshPorts: freshPorts, MDNS: mdns, Settle: settle, Bootstrap: bootstrap, Logger: g.logger(), OpenInRun: true}
			cfg.MaxFileChunks = maxFileChunks
			if clockOffset != 0 {
				// Tests only: play a device whose clock is wrong.
				cfg.Now = func() time.Time { return time.Now().Add(clockOffset) }
				g.logger().Warn("clock skewed on purpose (--debug-clock-offset): for tests only", "offset", clockOffset)
			}
			n, err := node.New(cfg)
			if err != nil {
				return err
			}
			runCtx := cmd.Context()
			if memprofile != "" {
				// The heap is written when the agent is told to stop and
				// before it lets go of anything: what an agent holds
				// live, for the footprint work (docs/benchmarks.md).
				var stop context.CancelFunc
				runCtx, stop = context.WithCancel(context.Background())
				defer stop()
				written := make(chan struct{})
				defer func() { stop(); <-written }()
				go func() {
					defer close(written)
					select {
					case <-cmd.Context().Done():
						writeHeapProfile(memprofile, g.logger())
						stop()
					case <-runCtx.Done():
					}
				}()
			}
			errc := make(chan error, 1)
			go func() { errc <- n.Run(runCtx) }()
			select {
			case err := <-errc:
				return err
			case <-n.Ready():
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ready device=%s api=%s listen=%s\n", n.ID(), n.APIAddr(), strings.Join(n.Addrs(), ","))
			if !quiet {
				go showProgress(cmd.Context(), n, os.Stdout)
			}
			return <-errc
		},
	}
	c.Flags().StringArrayVar(&listen, "listen", nil, "listen multiaddr (repeatable; default all interfaces, IPv4 and IPv6, TCP and QUIC; a port 0 gets the port of the last start when free)")
	c.Flags().BoolVar(&freshPorts, "fresh-ports", false, "listen on new ports the system picks, not those of the last start")
	c.Flags().BoolVar(&mdns, "mdns", true, "discover devices on the LAN with mDNS")
	c.Flags().DurationVar(&settle, "settle", 100*time.Millisecond, "quiet time before a changed file is taken")
	c.Flags().StringArrayVar(&bootstrap, "bootstrap", nil, "DHT bootstrap peer, a multiaddr ending in /p2p/<peer ID> (repeatable; also $WEFT_BOOTSTRAP); the vault's relays are always used")
	c.Flags().BoolVar(&quiet, "quiet", false, "do not show progress of long syncs")
	// Hidden: tests start agents with a skewed clock to check that
	// conflicts, restore --at and doctor do not follow it (docs/cli.md).
	c.Flags().DurationVar(&clockOffset, "debug-clock-offset", 0, "TESTS ONLY: run the agent as if its clock were off by this much (\"-48h\", \"90s\")")
	_ = c.Flags().MarkHidden("debug-clock-offset")
	// Hidden: a test makes a file over the size limit without writing
	// 256 GiB (docs/cli.md).
	c.Flags().IntVar(&maxFileChunks, "debug-max-file-chunks", 0, "TESTS ONLY: the most chunks one file may have (default: about 256 GiB worth)")
	_ = c.Flags().MarkHidden("debug-max-file-chunks")
	c.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile to this file (for benchmarks)")
	c.Flags().StringVar(&memprofile, "memprofile", "", "write a heap profile to this file when the agent is told to stop (for benchmarks)")
	_ = c.Flags().MarkHidden("cpuprofile")
	_ = c.Flags().MarkHidden("memprofile")
	return c
}

func inviteCmd(g *globals) *cobra.Command {
	var ttl time.Duration
	var qr, confirm bool
	c := &cobra.Command{
		Use:   "invite",
		Short: "Print a one-time code that lets another device join (needs `weft up` running)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var resp api.InviteResponse
			if err := cl.post("/v1/invite", map[string]any{"ttl_seconds": int(ttl.Seconds()), "confirm": confirm}, &resp); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if qr {
				if err := printQR(out, resp.Code); err != nil {
					return err
				}
			}
			if confirm {
				fmt.Fprintf(out, "On the other device run: weft join CODE FOLDER\nThe code lets one device in, until %s; joins by it wait here until one is approved (up to 4 at once).\n", resp.Expires.Local().Format(time.DateTime))
			} else {
				fmt.Fprintf(out, "On the other device run: weft join CODE FOLDER\nThe code works once, until %s.\n", resp.Expires.Local().Format(time.DateTime))
			}
			if confirm {
				fmt.Fprintln(out, "Each join waits for your approval: `weft devices pending` lists them with the words the joining device shows; `weft devices approve ID` lets it in.")
			}
			fmt.Fprintln(out, resp.Code)
			return nil
		},
	}
	c.Flags().DurationVar(&ttl, "ttl", members.DefaultInviteTTL, "how long the code stays valid")
	c.Flags().BoolVar(&qr, "qr", false, "also print the code as a QR code")
	c.Flags().BoolVar(&confirm, "confirm", false, "make each join wait for approval here (weft devices approve), comparing words both devices show")
	return c
}

func joinCmd(g *globals) *cobra.Command {
	var nameArg string
	c := &cobra.Command{
		Use:   "join CODE FOLDER",
		Short: "Join a vault with an invite code and sync it into FOLDER",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := g.openHome()
			if err != nil {
				return err
			}
			name, err := deviceName(nameArg)
			if err != nil {
				return err
			}
			hv, err := enrol.JoinVault(cmd.Context(), h, args[0], args[1], name, func(words string) {
				fmt.Fprintf(cmd.OutOrStdout(), "Waiting for approval on the inviting device (up to %v).\nIt must show these words beside this join; approve only if they match:\n\n  %s\n\n", enrol.ConfirmWait, words)
			})
			if err != nil {
				return err
			}
			if inv, err := member.ParseInvite(args[0]); err == nil {
				if id, err := h.Identity(); err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "The inviting device shows these words for this join: %s\n", inv.Words(id.ID()))
				}
			}
			running, err := g.loadInAgent()
			switch {
			case err != nil:
				return fmt.Errorf("joined vault %s, but the running agent could not start it (restart `weft up`): %w", hv.IDHex[:16], err)
			case running:
				fmt.Fprintf(cmd.OutOrStdout(), "Joined vault %s; the running agent is syncing it into %s now.\n", hv.IDHex[:16], hv.Folder)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "Joined vault %s; it syncs into %s with the next `weft up`.\n", hv.IDHex[:16], hv.Folder)
			}
			return nil
		},
	}
	nameFlag(c, &nameArg)
	return c
}

func statusCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Show this device, its folders and its peers",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var st api.Status
			if err := cl.get("/v1/status", &st); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, st)
			}
			if st.Name != "" {
				fmt.Fprintf(out, "device %s (%s)\n", st.Name, st.Device)
			} else {
				fmt.Fprintf(out, "device %s\n", st.Device)
			}
			// Where it listens, as others dial it (`weft recover --from`,
			// a relay's or a peer's configuration).
			for _, a := range st.Addrs {
				if !strings.Contains(a, "/p2p/") {
					a += "/p2p/" + st.Device
				}
				fmt.Fprintf(out, "listening on %s\n", a)
			}
			fmt.Fprintln(out)
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FOLDER\tSTATE\tFILES\tBYTES\tPENDING\tWRITTEN\tSAFE\tCONFLICTS")
			for _, f := range st.Folders {
				pending := fmt.Sprint(f.Pending)
				if f.PendingBytes > 0 {
					pending += " (" + doctor.HumanSize(f.PendingBytes) + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%d\n", f.Path, f.State, f.Files, doctor.HumanSize(f.Bytes), pending, f.Written, safeText(f), f.Conflicts)
			}
			tw.Flush()
			for _, f := range st.Folders {
				for _, e := range f.Errors {
					if e.Code != "" {
						fmt.Fprintf(out, "%s: %s: %s\n", f.Path, e.Code, e.Reason)
					}
				}
			}
			fmt.Fprintln(out)
			tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PEER\tNAME\tROLE\tCONNECTION\tIN SYNC\tSENT\tRECEIVED")
			for _, p := range st.Peers {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\t%s\n", p.ID, orDash(p.Name), p.Role, p.Connection, p.InSync, doctor.HumanSize(p.BytesSent), doctor.HumanSize(p.BytesReceived))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the documented JSON shape (docs/api.md)")
	return c
}

// safeText says how much of a folder's own work another device or a relay
// holds: "all" when none is unsafe (this device can be switched off).
func safeText(f api.FolderStatus) string {
	if f.Unsafe == 0 {
		return "all"
	}
	return fmt.Sprintf("%d (%d not yet)", f.Written-min(f.Unsafe, f.Written), f.Unsafe)
}

func conflictsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "conflicts",
		Short: "List conflict copies: whose content each holds, and what holds the name now",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var cs []api.Conflict
			if err := cl.get("/v1/conflicts", &cs); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, cs)
			}
			if len(cs) == 0 {
				fmt.Fprintln(out, "No conflict copies.")
				return nil
			}
			for _, c := range cs {
				fmt.Fprintf(out, "%s\n", filepath.Join(c.Folder, filepath.FromSlash(c.Path)))
				of := c.Of
				if of == "" {
					of = "(its name was shortened: see the file beside it)"
				}
				fmt.Fprintf(out, "  copy of    %s\n", of)
				fmt.Fprintf(out, "  holds      %s\n", conflictSide(c.Copy))
				if c.Winner != nil {
					fmt.Fprintf(out, "  name holds %s\n", conflictSide(*c.Winner))
				} else if c.Of != "" {
					fmt.Fprintf(out, "  name holds nothing now (deleted since)\n")
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md, GET /v1/conflicts)")
	return c
}

// conflictSide says whose content a side of a conflict is, when it was
// modified and its size.
func conflictSide(s api.ConflictSide) string {
	who := s.Short
	if s.Name != "" {
		who = s.Name + " (" + s.Short + ")"
	}
	out := fmt.Sprintf("%s, modified %s, %s", who, s.MTime.Local().Format("2006-01-02 15:04:05"), doctor.HumanSize(s.Size))
	if s.RecordedBy != "" {
		by := s.RecordedBy
		if d, err := keys.ParseDeviceID(by); err == nil {
			by = d.Short()
		}
		if s.RecordedByName != "" {
			by = s.RecordedByName + " (" + by + ")"
		}
		out += "; kept by " + by
	}
	return out
}

func devicesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "devices",
		Short: "List the devices of each vault",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var ds []api.Device
			if err := cl.get("/v1/devices", &ds); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FOLDER\tDEVICE\tNAME\tROLE\t")
			for _, d := range ds {
				self := ""
				if d.Self {
					self = "(this device)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Folder, d.ID, orDash(d.Name), d.Role, self)
			}
			return tw.Flush()
		},
	}
	c.AddCommand(pendingJoinsCmd(g), decideJoinCmd(g, true), decideJoinCmd(g, false), renameCmd(g))
	return c
}

func pendingJoinsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "pending",
		Short: "List the joins waiting for approval (codes made with `weft invite --confirm`)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var js []api.WaitingJoin
			if err := cl.get("/v1/joins", &js); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, js)
			}
			if len(js) == 0 {
				fmt.Fprintln(out, "No join waits for approval.")
				return nil
			}
			tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FOLDER\tDEVICE\tNAME\tWORDS\tWAITING\t")
			for _, j := range js {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", j.Folder, j.Device, orDash(j.Name), j.Words, time.Since(j.Since).Round(time.Second))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(out, "\nApprove a join only if the joining device shows the same words: weft devices approve DEVICE")
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{\"folder\", \"device\", \"name\", \"words\", \"since\"}]")
	return c
}

func decideJoinCmd(g *globals, approve bool) *cobra.Command {
	use, short, path, done := "approve DEVICE", "Let a waiting join in (compare the words first: weft devices pending)", "/v1/joins/approve", "Approved"
	if !approve {
		use, short, path, done = "deny DEVICE", "Refuse a waiting join; the joining device is told", "/v1/joins/deny", "Denied"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var j api.WaitingJoin
			if err := cl.post(path, api.JoinDecision{Device: args[0]}, &j); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s the join of %s to %s (words: %s).\n", done, j.Device, j.Folder, j.Words)
			return nil
		},
	}
}

func scanCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "scan [PATH]",
		Short: "Rescan every folder (or PATH) now; return once the changes found are durably recorded",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var req api.ScanRequest
			if len(args) == 1 {
				if req.Path, err = filepath.Abs(args[0]); err != nil {
					return err
				}
			}
			var res []api.ScanResult
			if err := cl.post("/v1/scan", req, &res); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			printScan(cmd.OutOrStdout(), res)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (docs/api.md)")
	return c
}

// printScan renders scan results: per folder a summary line, then the
// changes recorded (at most 20 by name), what is unsettled and skipped.
func printScan(w io.Writer, res []api.ScanResult) {
	for _, r := range res {
		where := r.Folder
		if r.Path != "" {
			where = filepath.Join(r.Folder, filepath.FromSlash(r.Path))
		}
		fmt.Fprintf(w, "%s: %d files (%s) in %d ms; %d changes recorded\n", where, r.Files, doctor.HumanSize(r.Bytes), r.Millis, r.Changes)
		if r.Ignored {
			fmt.Fprintf(w, "  %s is ignored (.weftignore): not synced\n", r.Path)
		}
		for i, c := range r.Changed {
			if i == 20 {
				fmt.Fprintf(w, "  ... and %d more\n", r.Changes-20)
				break
			}
			fmt.Fprintf(w, "  %-12s %s\n", c.Change, c.Path)
		}
		for _, p := range r.Unsettled {
			fmt.Fprintf(w, "  %-12s %s (still changing; recorded once quiet)\n", "unsettled", p)
		}
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %-12s %s: %s\n", "skipped", s.Path, s.Reason)
		}
	}
}

func versionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := buildVersion()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			mod := ""
			if v.Modified {
				mod = ", modified"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "weft %s (commit %s%s, %s, %s)\n", v.Version, v.Commit, mod, v.Date, v.Go)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: {\"version\", \"commit\", \"date\", \"modified\", \"go\"}")
	return c
}

func usageArgs(f cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := f(cmd, args); err != nil {
			return exitUsage{fmt.Errorf("%w\nusage: %s", err, cmd.UseLine())}
		}
		return nil
	}
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printQR prints code as a QR code made of terminal characters.
func printQR(w io.Writer, code string) error {
	q, err := qrcode.New(strings.ToUpper(code), qrcode.Medium)
	if err != nil {
		return fmt.Errorf("making QR code: %w", err)
	}
	_, err = io.WriteString(w, q.ToSmallString(false))
	return err
}

// writeHeapProfile writes the live heap, after a collection, to path.
func writeHeapProfile(path string, log *slog.Logger) {
	f, err := os.Create(path)
	if err != nil {
		log.Warn("writing the heap profile", "err", err)
		return
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		log.Warn("writing the heap profile", "err", err)
	}
}
