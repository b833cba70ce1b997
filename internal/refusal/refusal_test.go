package refusal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftsync/weft/protocol/wire"
)

// lines is a slog handler that keeps the messages it is given.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.mu.Lock()
	l.got = append(l.got, b.String())
	l.mu.Unlock()
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

func TestLogOncePerPeerPerInterval(t *testing.T) {
	h := &lines{}
	l := New(Config{Logger: slog.New(h), Every: time.Hour, PerInterval: 3})
	defer l.Close()
	now := time.Unix(1000, 0)
	l.nowForTests = func() time.Time { return now }
	for i := 0; i < 5; i++ {
		l.Note("/weft/log/1", Oversized, "peerA", errors.New("frame too large"))
	}
	l.Note("/weft/log/1", NotMember, "peerB", nil)
	for i := 0; i < 10; i++ {
		l.Note("/weft/pair/1", RateLimited, fmt.Sprintf("fresh%d", i), nil)
	}
	got := h.all()
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3 (one per peer, at most PerInterval):\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{"peer=peerA", "peer=peerB", "peer=fresh0"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no line with %s:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if !strings.HasPrefix(got[0], "WARN") || !strings.Contains(got[0], "reason=oversized") || !strings.Contains(got[0], "protocol=/weft/log/1") {
		t.Errorf("first line %q: want a WARN with the protocol and reason", got[0])
	}
	l.summarise()
	got = h.all()
	if len(got) != 4 || !strings.Contains(got[3], "refused=13") || !strings.Contains(got[3], "peers=10") {
		t.Fatalf("summary: got %q, want refused=13 peers=10 (4 of peerA, 9 fresh)", got[len(got)-1])
	}
	now = now.Add(time.Hour)
	l.Note("/weft/log/1", Oversized, "peerA", nil)
	if got := h.all(); len(got) != 5 {
		t.Fatalf("a new interval: got %d lines, want peerA logged again", len(got))
	}
	if c := l.Count("/weft/log/1", Oversized); c != 6 {
		t.Fatalf("count %d, want 6", c)
	}
	if n := l.Total(); n != 17 {
		t.Fatalf("total %d, want 17", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collector("weft_refused_streams_total"))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			lb := m.GetLabel()
			series = append(series, fmt.Sprintf("%s{%s=%s,%s=%s} %v", f.GetName(), lb[0].GetName(), lb[0].GetValue(),
				lb[1].GetName(), lb[1].GetValue(), m.GetCounter().GetValue()))
		}
	}
	want := []string{
		"weft_refused_streams_total{protocol=/weft/log/1,reason=not-member} 1",
		"weft_refused_streams_total{protocol=/weft/log/1,reason=oversized} 6",
		"weft_refused_streams_total{protocol=/weft/pair/1,reason=rate-limited} 10",
	}
	if strings.Join(series, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(series, "\n"), strings.Join(want, "\n"))
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"too large", fmt.Errorf("x: %w", wire.ErrFrameTooLarge), Oversized},
		{"no memory", fmt.Errorf("x: %w", wire.ErrNoMemory), NoMemory},
		{"deadline", fmt.Errorf("x: %w", os.ErrDeadlineExceeded), Timeout},
		{"eof", io.EOF, ""},
		{"cut short", fmt.Errorf("x: %w", io.ErrUnexpectedEOF), ""},
		{"peer's error", wire.Error{Code: wire.CodeInternal}, ""},
		{"unexpected", fmt.Errorf("%w: got entry", wire.ErrUnexpected), Malformed},
		{"bad payload", fmt.Errorf("%w", wire.ErrMalformedPayload), Malformed},
		{"version", fmt.Errorf("%w: 9", wire.ErrBadVersion), Version},
		{"not a device", fmt.Errorf("%w: rsa", ErrNotDevice), NotDevice},
		{"other", errors.New("stream reset"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummaryAfterInterval(t *testing.T) {
	h := &lines{}
	l := New(Config{Logger: slog.New(h), Every: 20 * time.Millisecond, PerInterval: 1})
	defer l.Close()
	l.Note("p", Oversized, "a", nil)
	l.Note("p", Oversized, "a", nil)
	deadline := time.Now().Add(5 * time.Second)
	for len(h.all()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no summary line within 5 s: %q", h.all())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := h.all()[1]; !strings.Contains(got, "refused=1") {
		t.Fatalf("summary %q, want refused=1", got)
	}
}
