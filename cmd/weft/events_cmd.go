package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsync/weft/node/api"
)

func eventsCmd(g *globals) *cobra.Command {
	var (
		asJSON, reconnect bool
		since             uint64
		types             []string
		folder            string
	)
	c := &cobra.Command{
		Use:   "events [--since ID] [--type T,...] [--folder DIR] [--reconnect] [--json]",
		Short: "Follow what the agent does, one event per line, until interrupted",
		Long: "Each event has an ID (in --json); --since ID starts right after it, with what the agent\n" +
			"still keeps (the last 4,096 events). A reader that falls further behind, or resumes from\n" +
			"an earlier run of the agent, gets an events-missed event instead of a silent gap.\n" +
			"--reconnect waits for a stopped agent to start again and resumes after the last event shown.",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(types) > 0 {
				q.Set("type", strings.Join(types, ","))
			}
			if folder != "" {
				abs, err := filepath.Abs(folder)
				if err != nil {
					return err
				}
				q.Set("folder", abs)
			}
			ctx, out, last := cmd.Context(), cmd.OutOrStdout(), since
			told := false // the agent's outage was said
			show := func(ev api.Event, raw []byte) error {
				if ev.ID != 0 {
					last = ev.ID
				}
				told = false
				if asJSON {
					_, err := fmt.Fprintf(out, "%s\n", raw)
					return err
				}
				_, err := fmt.Fprintln(out, formatEvent(ev))
				return err
			}
			for attempt := 0; ; attempt++ {
				switch {
				case last != 0:
					q.Set("since", strconv.FormatUint(last, 10))
				case attempt > 0:
					// Reconnected before any event was shown: from the
					// oldest the agent keeps, after an events-missed (an ID
					// of no run of this agent).
					q.Set("since", "1")
				}
				err := followOnce(g, ctx, "/v1/events?"+q.Encode(), show)
				if ctx.Err() != nil {
					return nil // interrupted: the normal way to stop
				}
				var refused agentRefused
				if !reconnect || errors.As(err, &refused) {
					return err
				}
				if !told {
					fmt.Fprintf(cmd.ErrOrStderr(), "weft: %v; reconnecting once the agent is back (Ctrl-C to stop)\n", err)
					told = true
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(reconnectEvery):
				}
			}
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print each event as one line of JSON (docs/api.md)")
	c.Flags().Uint64Var(&since, "since", 0, "start right after the event with this ID (from --json)")
	c.Flags().StringSliceVar(&types, "type", nil, "only events of these types (comma-separated; docs/api.md lists them)")
	c.Flags().StringVar(&folder, "folder", "", "only events of this synced folder")
	c.Flags().BoolVar(&reconnect, "reconnect", false, "when the agent stops, wait for it and resume after the last event shown")
	return c
}

// reconnectEvery is how often `weft events --reconnect` looks for the
// agent again.
const reconnectEvery = time.Second

// followOnce follows path on the running agent (its address and token
// read again each time: a restarted agent has new ones).
func followOnce(g *globals, ctx context.Context, path string, fn func(api.Event, []byte) error) error {
	cl, err := g.client()
	if err != nil {
		return err
	}
	return cl.follow(ctx, path, fn)
}

// agentRefused is the agent's answer to a request it refused (an HTTP
// status other than 200): asking again gets the same answer.
type agentRefused struct{ msg string }

func (e agentRefused) Error() string { return "agent: " + e.msg }

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
		return agentRefused{strings.TrimSpace(string(msg))}
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
	if ev.Type == api.EventMissed && ev.Count == 0 {
		b.WriteString(" (from an earlier run of the agent: how many is unknown)")
	}
	return b.String()
}
