package refusal

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftsync/weft/protocol/wire"
)

// Reasons, the values of the reason label. They are stable: dashboards
// and alerts use them (docs/api.md, docs/operations.md).
const (
	// Oversized: the first frame announced more than a peer not yet
	// checked may send (wire.MaxHelloFrame); nothing of it was read.
	Oversized = "oversized"
	// Malformed: the first frame was not the message the protocol opens
	// with, or did not parse.
	Malformed = "malformed"
	// Version: the peer speaks another protocol version.
	Version = "version"
	// NotMember: the peer is not a member (or relay) of the vault it named,
	// or this side does not serve that vault; both are answered alike.
	NotMember = "not-member"
	// NotDevice: the peer's key is not an ed25519 key, so it cannot be a
	// weft device or relay.
	NotDevice = "not-device"
	// RateLimited: pairing or recovery attempts over the limit per identity or in
	// total.
	RateLimited = "rate-limited"
	// BadInvite: a pairing proof matched no valid invite code.
	BadInvite = "bad-invite"
	// BadRecovery: a recovery (/weft/recover/1) whose proof or record
	// failed, or for a vault not served here.
	BadRecovery = "bad-recovery"
	// NoMemory: the resource manager refused the memory for a frame.
	NoMemory = "no-memory"
	// Timeout: the peer sent no complete first message in time.
	Timeout = "timeout"
)

// Classify names the refusal reason of an error from reading a stream's
// first message (wire.Conn.ReadHello, Expect), or "" when the error says
// nothing about the peer (it closed or reset the stream).
func Classify(err error) string {
	var we wire.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNotDevice):
		return NotDevice
	case errors.Is(err, wire.ErrFrameTooLarge):
		return Oversized
	case errors.Is(err, wire.ErrNoMemory):
		return NoMemory
	case errors.Is(err, os.ErrDeadlineExceeded):
		return Timeout
	case errors.As(err, &we):
		return "" // the peer gave up first
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ""
	case errors.Is(err, wire.ErrUnexpected), errors.Is(err, wire.ErrMalformedPayload),
		errors.Is(err, wire.ErrEmptyFrame), errors.Is(err, wire.ErrMalformedLength):
		return Malformed
	case errors.Is(err, wire.ErrBadVersion):
		return Version
	}
	return ""
}

// ErrNotDevice marks the error of a peer whose key cannot be a weft
// device's; callers wrap the key error with it.
var ErrNotDevice = errors.New("peer is not a weft device")

// Config configures a Log.
type Config struct {
	Logger *slog.Logger
	// Every is the interval: a peer is logged at most once per interval,
	// and refusals not logged are summed in one line at its end. Default
	// one minute.
	Every time.Duration
	// PerInterval bounds the per-peer lines in one interval, whatever the
	// number of identities refused; default 10.
	PerInterval int
}

// Log counts refusals and logs them at a bounded rate. It is safe for
// concurrent use.
type Log struct {
	log   *slog.Logger
	every time.Duration
	lines int

	mu          sync.Mutex // guards the fields below
	counts      map[key]uint64
	logged      map[string]time.Time // peer: when last logged
	linesNow    int                  // per-peer lines in this interval
	start       time.Time            // of the interval
	quiet       uint64               // refusals not logged in this interval
	quietPeers  map[string]bool
	summary     *time.Timer
	closed      bool
	nowForTests func() time.Time
}

type key struct{ protocol, reason string }

// New returns a Log.
func New(cfg Config) *Log {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.PerInterval <= 0 {
		cfg.PerInterval = 10
	}
	return &Log{log: cfg.Logger, every: cfg.Every, lines: cfg.PerInterval,
		counts: map[key]uint64{}, logged: map[string]time.Time{}, quietPeers: map[string]bool{}}
}

func (l *Log) now() time.Time {
	if l.nowForTests != nil {
		return l.nowForTests()
	}
	return time.Now()
}

// Note records that a stream of protocol from peer was refused for
// reason; err, if not nil, is the detail logged with it.
func (l *Log) Note(protocol, reason, peer string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[key{protocol, reason}]++
	now := l.now()
	if now.Sub(l.start) >= l.every {
		l.start, l.linesNow = now, 0
		for p, at := range l.logged {
			if now.Sub(at) >= l.every {
				delete(l.logged, p)
			}
		}
	}
	if at, ok := l.logged[peer]; (ok && now.Sub(at) < l.every) || l.linesNow >= l.lines || l.closed {
		l.quiet++
		if len(l.quietPeers) < 100_000 {
			l.quietPeers[peer] = true
		}
		if l.summary == nil && !l.closed {
			l.summary = time.AfterFunc(l.every, l.summarise)
		}
		return
	}
	l.logged[peer] = now
	l.linesNow++
	args := []any{"peer", peer, "protocol", protocol, "reason", reason}
	if err != nil {
		args = append(args, "err", err)
	}
	args = append(args, "quiet_for", l.every.String())
	l.log.Warn("refused a stream from a peer that is not admitted", args...)
}

// summarise logs the refusals of the interval that were not logged one
// by one.
func (l *Log) summarise() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.summary = nil
	if l.quiet == 0 || l.closed {
		return
	}
	l.log.Warn("refused more streams from peers that are not admitted", "refused", l.quiet,
		"peers", len(l.quietPeers), "interval", l.every.String())
	l.quiet = 0
	l.quietPeers = map[string]bool{}
}

// Close stops the pending summary; Note still counts afterwards but logs
// nothing more.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.summary != nil {
		l.summary.Stop()
		l.summary = nil
	}
}

// Count is the number of refusals of protocol for reason so far.
func (l *Log) Count(protocol, reason string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[key{protocol, reason}]
}

// Total is the number of refusals so far.
func (l *Log) Total() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n uint64
	for _, c := range l.counts {
		n += c
	}
	return n
}

// Collector exports the counts as the counter name (for example
// weft_refused_streams_total) with labels protocol and reason.
func (l *Log) Collector(name string) prometheus.Collector {
	return collector{l: l, desc: prometheus.NewDesc(name,
		"Streams refused to peers not admitted, by protocol and reason (docs/security.md).",
		[]string{"protocol", "reason"}, nil)}
}

type collector struct {
	l    *Log
	desc *prometheus.Desc
}

func (c collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.l.mu.Lock()
	keys := make([]key, 0, len(c.l.counts))
	vals := make(map[key]uint64, len(c.l.counts))
	for k, v := range c.l.counts {
		keys = append(keys, k)
		vals[k] = v
	}
	c.l.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].protocol != keys[j].protocol {
			return keys[i].protocol < keys[j].protocol
		}
		return keys[i].reason < keys[j].reason
	})
	for _, k := range keys {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(vals[k]), k.protocol, k.reason)
	}
}
