package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// CalmProbs is S1's schedule without concurrent edits and restarts: the
// mix S3 runs (and TestS1Small's).
var CalmProbs = Probs{Write: 50, Delete: 10, Rename: 8, Partition: 4, Heal: 4}

// S3Result is an S3 run: the S1 result and checks, plus what went through
// the relay.
type S3Result struct {
	*Result
	// Natted is how many devices were behind a NAT (every odd one).
	Natted int `json:"natted_devices"`
	// DirectShare is DirectPairs / PossiblePairs at the end of the run.
	DirectShare float64 `json:"direct_share"`
	// RelayBytesSent and RelayBytesReceived are the relay's own counters
	// (application payload to and from devices, framing not included),
	// over the whole run including the first sync after setup.
	RelayBytesSent     int64 `json:"relay_bytes_sent"`
	RelayBytesReceived int64 `json:"relay_bytes_received"`
}

// natted is S3's NAT rule: every odd-numbered device, so half of them.
func natted(i int) bool { return i%2 == 1 }

// RunS3 runs cfg's schedule (S1's runner) on a cluster where every odd
// device is behind a NAT and one relay, listed in the vault, is linked to
// every device. Two NAT'ed devices have no link at all; a NAT'ed and a
// public device are linked, and only the NAT'ed side can open the
// connection. Partitions cut links between devices only: the relay stays
// reachable from both sides, as a relay on the internet does while a LAN
// splits. cfg.NAT and cfg.Hub are ignored.
func RunS3(ctx context.Context, cfg Config) (*S3Result, error) {
	out := &S3Result{}
	res, err := runSchedule(ctx, cfg, fmt.Sprintf("%d devices (odd ones behind a NAT) and a relay", cfg.Devices),
		func(cfg Config) (*Cluster, int, error) {
			c, err := buildS3Cluster(ctx, cfg)
			return c, cfg.Devices, err
		},
		func(c *Cluster, _ *Result) {
			if rl := c.Relay(); rl != nil {
				out.RelayBytesSent, out.RelayBytesReceived = rl.Relay.BytesSent(), rl.Relay.BytesReceived()
			}
		})
	if err != nil {
		return nil, err
	}
	out.Result = res
	for i := range cfg.Devices {
		if natted(i) {
			out.Natted++
		}
	}
	if res.PossiblePairs > 0 {
		out.DirectShare = float64(res.DirectPairs) / float64(res.PossiblePairs)
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "%s: %d of %d pairs direct, relay sent %d and received %d bytes\n", cfg.Scenario, res.DirectPairs, res.PossiblePairs, out.RelayBytesSent, out.RelayBytesReceived)
	}
	return out, nil
}

// buildS3Cluster creates the admin, the relay (recorded in the vault
// before anyone joins, so every invite carries it), pairs the other
// devices, links every pair but NAT'ed ones and starts everything.
func buildS3Cluster(ctx context.Context, cfg Config) (*Cluster, error) {
	c, err := NewCluster(ClusterConfig{Dir: cfg.Dir, Link: cfg.Link})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Cluster, error) {
		c.Close()
		return nil, err
	}
	if err := c.Start(c.Device(0)); err != nil {
		return fail(err)
	}
	if _, err := c.AddRelay(); err != nil {
		return fail(err)
	}
	for i := 1; i < cfg.Devices; i++ {
		if _, err := c.Join(ctx, natted(i)); err != nil {
			return fail(err)
		}
	}
	if err := c.RecordAll(); err != nil {
		return fail(err)
	}
	for i := range cfg.Devices {
		for j := i + 1; j < cfg.Devices; j++ {
			if natted(i) && natted(j) {
				continue // no route between two NATs in this model
			}
			if err := c.AddEdge(i, j); err != nil {
				return fail(err)
			}
		}
	}
	for i := range cfg.Devices {
		if err := c.Start(c.Device(i)); err != nil {
			return fail(err)
		}
	}
	c.ConnectEdges(ctx)
	return c, nil
}

// WriteS3Table prints res as WriteTable does, then the relay's rows.
func WriteS3Table(w io.Writer, res *S3Result) {
	row := func(k string, v any) { fmt.Fprintf(w, "  %-34s %v\n", k, v) }
	row("devices behind a NAT", fmt.Sprintf("%d of %d", res.Natted, res.Devices))
	row("share of pairs direct", fmt.Sprintf("%.3f (%d of %d)", res.DirectShare, res.DirectPairs, res.PossiblePairs))
	row("relay bytes sent / received", fmt.Sprintf("%d / %d", res.RelayBytesSent, res.RelayBytesReceived))
	WriteTable(w, res.Result)
}

// WriteS3JSON writes res (the S1 fields and the relay's) to path.
func WriteS3JSON(path string, res *S3Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
