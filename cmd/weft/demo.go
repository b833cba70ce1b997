package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/weftsync/weft/node/enrol"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/home"
)

// demoCmd runs two devices on loopback in a temporary directory, pairs
// them, and shows files written on one arriving on the other. It sends
// nothing off the machine: both devices listen on 127.0.0.1 only and LAN
// discovery is off.
func demoCmd(g *globals) *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run two devices on this machine, pair them, and watch files sync",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), g, keep)
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the temporary directory afterwards")
	return c
}

type demoDevice struct {
	name   string
	folder string
	node   *node.Node
	done   chan error
}

func startDemoDevice(ctx context.Context, name, dir string, log *slog.Logger) (*demoDevice, error) {
	h, err := home.Open(filepath.Join(dir, name+"-home"))
	if err != nil {
		return nil, err
	}
	n, err := node.New(node.Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-", Logger: log.With("device", name)})
	if err != nil {
		return nil, err
	}
	vs, err := h.Vaults()
	if err != nil {
		return nil, err
	}
	d := &demoDevice{name: name, folder: vs[0].Folder, node: n, done: make(chan error, 1)}
	go func() { d.done <- n.Run(ctx) }()
	select {
	case err := <-d.done:
		return nil, fmt.Errorf("%s stopped: %w", name, err)
	case <-n.Ready():
	}
	return d, nil
}

func runDemo(ctx context.Context, out io.Writer, g *globals, keep bool) error {
	dir, err := os.MkdirTemp("", "weft-demo-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(out, "Working in %s (kept afterwards)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	level := slog.LevelWarn
	if g.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	hA, err := home.Open(filepath.Join(dir, "laptop-home"))
	if err != nil {
		return err
	}
	root, _, err := enrol.InitVault(hA, filepath.Join(dir, "laptop"), "laptop", time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "1. Created a vault on \"laptop\"; its recovery phrase starts %q...\n", firstWords(root, 3))
	a, err := startDemoDevice(ctx, "laptop", dir, log)
	if err != nil {
		return err
	}
	inv, err := a.node.Members().Invite(keys.VaultID{}, 10*time.Minute, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "2. \"laptop\" made a one-time invite code (%d characters)\n", len(inv.String()))
	hB, err := home.Open(filepath.Join(dir, "phone-home"))
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := enrol.JoinVault(ctx, hB, inv.String(), filepath.Join(dir, "phone"), "phone", nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "3. \"phone\" joined with the code in %s\n", since(t0))
	b, err := startDemoDevice(ctx, "phone", dir, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "4. Both devices run on 127.0.0.1:\n     laptop %s\n     phone  %s\n", a.node.ID(), b.node.ID())

	photo := make([]byte, 3<<20)
	if _, err := rand.Read(photo); err != nil {
		return err
	}
	files := []struct {
		on, to *demoDevice
		path   string
		data   []byte
	}{
		{a, b, "notes/hello.md", []byte("# Hello\n\nThis note was written on the laptop.\n")},
		{a, b, "notes/ideas/weft.md", bytes.Repeat([]byte("Sync that never loses an edit.\n"), 200)},
		{a, b, "photos/beach.jpg", photo},
		{b, a, "notes/from-phone.md", []byte("Written on the phone, read on the laptop.\n")},
	}
	fmt.Fprintf(out, "5. Writing files and timing their arrival:\n")
	for _, f := range files {
		src := filepath.Join(f.on.folder, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			return err
		}
		start := time.Now()
		if err := os.WriteFile(src, f.data, 0o644); err != nil {
			return err
		}
		if err := waitFor(ctx, filepath.Join(f.to.folder, filepath.FromSlash(f.path)), f.data, 60*time.Second); err != nil {
			return fmt.Errorf("%s did not arrive on %s: %w", f.path, f.to.name, err)
		}
		fmt.Fprintf(out, "     %-6s -> %-6s %-22s %9s  arrived in %s\n", f.on.name, f.to.name, f.path, doctor.HumanSize(int64(len(f.data))), since(start))
	}
	start := time.Now()
	gone := filepath.Join(a.folder, "notes", "hello.md")
	if err := os.Remove(filepath.Join(b.folder, "notes", "hello.md")); err != nil {
		return err
	}
	if err := waitGone(ctx, gone, 60*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(out, "     phone  -> laptop deleted notes/hello.md           in %s\n", since(start))
	st := a.node.Status()
	for _, p := range st.Peers {
		fmt.Fprintf(out, "6. laptop's view of phone: connection=%s in_sync=%v sent=%s received=%s\n", p.Connection, p.InSync, doctor.HumanSize(p.BytesSent), doctor.HumanSize(p.BytesReceived))
	}
	cancel()
	for _, d := range []*demoDevice{a, b} {
		if err := <-d.done; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	fmt.Fprintf(out, "Done: both devices stopped")
	if !keep {
		fmt.Fprintf(out, " and the temporary directory is removed")
	}
	fmt.Fprintln(out, ".")
	return nil
}

func firstWords(r keys.RootSecret, n int) string {
	p := r.Phrase()
	for i, c := 0, 0; i < len(p); i++ {
		if p[i] == ' ' {
			c++
			if c == n {
				return p[:i]
			}
		}
	}
	return p
}

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }

// waitFor polls until path holds want.
func waitFor(ctx context.Context, path string, want []byte, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return fmt.Errorf("not there after %s", limit)
}

func waitGone(ctx context.Context, path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s still there after %s", path, limit)
}
