package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
)

func eventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "events",
		Short: "Follow what the agent does, one event per line, until interrupted",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			err = cl.follow(cmd.Context(), "/v1/events", func(ev api.Event, raw []byte) error {
				if asJSON {
					_, err := fmt.Fprintf(out, "%s\n", raw)
					return err
				}
				_, err := fmt.Fprintln(out, formatEvent(ev))
				return err
			})
			if cmd.Context().Err() != nil {
				return nil // interrupted: the normal way to stop
			}
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print each event as one line of JSON (docs/api.md)")
	return c
}

// follow reads the Server-Sent Events stream at path and calls fn for
// each event until ctx ends or the stream does. The stream ending while
// ctx is live is an error: the agent stopped.
func (c *client) follow(ctx context.Context, path string, fn func(api.Event, []byte) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream is long-lived
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reaching the agent (is `weft up` running?): %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("agent: %s", strings.TrimSpace(string(msg)))
	}
	return readSSE(resp.Body, fn)
}

// readSSE parses a Server-Sent Events stream of JSON events: each message
// is "event:" and "data:" lines ended by a blank line.
func readSSE(r io.Reader, fn func(api.Event, []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) == 0 {
				continue
			}
			raw := []byte(strings.Join(data, "\n"))
			data = data[:0]
			var ev api.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			if err := fn(ev, raw); err != nil {
				return err
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("event stream: %w", err)
	}
	return errors.New("event stream ended: the agent stopped")
}

// formatEvent renders an event as one line: local time, type, what it is
// about (path, else peer, else folder), then its details.
func formatEvent(ev api.Event) string {
	var b strings.Builder
	b.WriteString(ev.Time.Local().Format("15:04:05.000"))
	fmt.Fprintf(&b, " %-17s", ev.Type)
	switch {
	case ev.Path != "":
		b.WriteString(" " + ev.Path)
	case ev.Peer != "":
		b.WriteString(" peer " + ev.Peer)
	case ev.Folder != "":
		b.WriteString(" " + ev.Folder)
	}
	if ev.Path != "" && ev.Peer != "" {
		b.WriteString(" peer=" + ev.Peer)
	}
	if ev.Kind != "" {
		b.WriteString(" kind=" + ev.Kind)
	}
	if ev.Count != 0 {
		fmt.Fprintf(&b, " count=%d", ev.Count)
	}
	if ev.Bytes != 0 {
		fmt.Fprintf(&b, " bytes=%d", ev.Bytes)
	}
	if ev.Seq != 0 {
		fmt.Fprintf(&b, " seq=%d", ev.Seq)
	}
	if ev.Error != "" {
		fmt.Fprintf(&b, " error=%q", ev.Error)
	}
	return b.String()
}
