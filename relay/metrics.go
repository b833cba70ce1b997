package relay

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weftsync/weft/store/chunkstore"
	"github.com/weftsync/weft/store/pack"
)

// stats is the relay's Prometheus registry (private: nothing registers in
// the process-wide default) and its counters. It is also the wire.Counter
// of every stream, so bytes are counted as application payload without
// framing, like a device's. Per-vault gauges are read from the replicas at
// scrape time. docs/operations.md lists every metric.
type stats struct {
	frames        atomic.Int64 // frames sent and received: activity, for idleLoop
	reg           *prometheus.Registry
	circuit       relayv2.MetricsTracer
	bytesSent     prometheus.Counter
	bytesReceived prometheus.Counter
	entriesStored prometheus.Counter
	entriesServed prometheus.Counter
	chunksStored  prometheus.Counter
	chunksServed  prometheus.Counter
	devices       prometheus.Gauge

	// Garbage collection (gc.go), over all vaults.
	gcRuns           prometheus.Counter
	gcErrors         prometheus.Counter
	gcChunks         prometheus.Counter
	gcBytes          prometheus.Counter
	gcDiskFreed      prometheus.Counter
	gcPacksRewritten prometheus.Counter
	gcLast           prometheus.Gauge
	gcDuration       prometheus.Gauge

	// Scrub (scrub.go), over all vaults.
	scrubChunks       prometheus.Counter
	scrubBytes        prometheus.Counter
	scrubCorrupt      prometheus.Counter
	chunksQuarantined prometheus.Counter
}

func newStats() *stats {
	reg := prometheus.NewRegistry()
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "weft", Subsystem: "relay", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	st := &stats{
		reg:           reg,
		circuit:       relayv2.NewMetricsTracer(relayv2.WithRegisterer(reg)),
		bytesSent:     counter("bytes_sent_total", "Application payload bytes sent to devices (framing not included)."),
		bytesReceived: counter("bytes_received_total", "Application payload bytes received from devices (framing not included)."),
		entriesStored: counter("entries_stored_total", "Log entries verified and stored."),
		entriesServed: counter("entries_served_total", "Log entries sent to devices."),
		chunksStored:  counter("chunks_stored_total", "Encrypted chunks verified against their CID and stored."),
		chunksServed:  counter("chunks_served_total", "Encrypted chunks sent to devices."),
		devices: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "weft", Subsystem: "relay",
			Name: "devices_connected", Help: "Devices of served vaults connected now."}),
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "weft", Subsystem: "relay", Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	st.gcRuns = counter("gc_runs_total", "Garbage collections of a vault's chunks, finished or not.")
	st.gcErrors = counter("gc_errors_total", "Garbage collections that stopped on an error (nothing is dropped from a partial view).")
	st.gcChunks = counter("gc_chunks_reclaimed_total", "Chunks no retained version references, dropped from the chunk store.")
	st.gcBytes = counter("gc_bytes_reclaimed_total", "Encrypted bytes of the chunks reclaimed.")
	st.gcDiskFreed = counter("gc_disk_bytes_freed_total", "Pack file bytes given back to the file system by GC.")
	st.gcPacksRewritten = counter("gc_packs_rewritten_total", "Pack files rewritten by GC to give dead space back.")
	st.gcLast = gauge("gc_last_run_timestamp_seconds", "Unix time at which the last garbage collection ended.")
	st.gcDuration = gauge("gc_last_duration_seconds", "How long the last garbage collection of a vault took.")
	st.scrubChunks = counter("scrub_chunks_verified_total", "Chunks re-read and checked against their CID by the scrub.")
	st.scrubBytes = counter("scrub_bytes_verified_total", "Stored bytes (pack records) re-read and checked by the scrub.")
	st.scrubCorrupt = counter("scrub_corrupt_chunks_total", "Chunks the scrub found corrupt and quarantined.")
	st.chunksQuarantined = counter("chunks_quarantined_total", "Chunks found corrupt by the scrub, by a read while serving, or by GC, and quarantined: no longer served or counted held, fetched again from devices.")
	reg.MustRegister(st.devices, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return st
}

// gcDone records one vault's garbage collection, ended at end.
func (s *stats) gcDone(res gcResult, err error, end time.Time, took time.Duration) {
	s.gcRuns.Inc()
	if err != nil {
		s.gcErrors.Inc()
	}
	s.gcChunks.Add(float64(res.Dropped))
	s.gcBytes.Add(float64(max(res.DroppedBytes, 0)))
	s.gcDiskFreed.Add(float64(max(res.BytesOnDiskBefore-res.BytesOnDiskAfter, 0)))
	s.gcPacksRewritten.Add(float64(res.PacksRewritten))
	s.gcLast.Set(float64(end.UnixMilli()) / 1000)
	s.gcDuration.Set(took.Seconds())
}

// scrubbed records what scrub steps verified.
func (s *stats) scrubbed(res pack.ScrubStepResult) {
	s.scrubChunks.Add(float64(res.Checked))
	s.scrubBytes.Add(float64(max(res.Bytes, 0)))
}

// quarantined records n chunks found corrupt by by.
func (s *stats) quarantined(n int, by pack.FoundBy) {
	s.chunksQuarantined.Add(float64(n))
	if by == pack.FoundByScrub {
		s.scrubCorrupt.Add(float64(n))
	}
}

// Sent and Received make stats a wire.Counter.
func (s *stats) Sent(n int)     { s.bytesSent.Add(float64(n)); s.frames.Add(1) }
func (s *stats) Received(n int) { s.bytesReceived.Add(float64(n)); s.frames.Add(1) }

// devicesChanged recounts the connected devices of served vaults.
func (s *stats) devicesChanged(r *Relay) {
	n := 0
	for _, p := range r.host.Network().Peers() {
		if r.host.Network().Connectedness(p) != network.Connected {
			continue
		}
		if d, err := DeviceIDOf(p); err == nil && len(r.vaultsOf(d)) > 0 {
			n++
		}
	}
	s.devices.Set(float64(n))
}

// replicaCollector reports each served vault's store at scrape time.
type replicaCollector struct{ r *Relay }

var (
	descVaults  = prometheus.NewDesc("weft_relay_vaults", "Vaults this relay serves.", nil, nil)
	descBytes   = prometheus.NewDesc("weft_relay_vault_bytes_stored", "Encrypted chunk bytes stored for a vault.", []string{"vault"}, nil)
	descDisk    = prometheus.NewDesc("weft_relay_vault_bytes_on_disk", "Bytes of a vault's pack files on disk, or of its objects in object storage (dead records included until a GC rewrites them).", []string{"vault"}, nil)
	descChunks  = prometheus.NewDesc("weft_relay_vault_chunks", "Chunks stored for a vault.", []string{"vault"}, nil)
	descEntries = prometheus.NewDesc("weft_relay_vault_entries", "Log entries stored for a vault.", []string{"vault"}, nil)
	descWanted  = prometheus.NewDesc("weft_relay_vault_chunks_wanted", "Chunks referenced by stored entries and not yet fetched.", []string{"vault"}, nil)
	descFull    = prometheus.NewDesc("weft_relay_vault_quota_full", "1 when a vault's quota is reached.", []string{"vault"}, nil)
	descScrub   = prometheus.NewDesc("weft_relay_vault_scrub_last_pass_timestamp_seconds", "Unix time at which the last scrub pass over a vault's chunks ended (0: none yet).", []string{"vault"}, nil)
	descObjReqs = prometheus.NewDesc("weft_relay_vault_object_requests_total", "Requests sent to object storage for a vault's chunks since the relay started, by kind: put, get, list, delete (with --chunks s3://).", []string{"vault", "kind"}, nil)
)

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVaults, descBytes, descDisk, descChunks, descEntries, descWanted, descFull, descScrub, descObjReqs} {
		ch <- d
	}
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	c.r.mu.Lock()
	reps := make([]*replica, 0, len(c.r.vaults))
	for _, rep := range c.r.vaults {
		reps = append(reps, rep)
	}
	closed := c.r.closed
	c.r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descVaults, prometheus.GaugeValue, float64(len(reps)))
	if closed {
		return
	}
	for _, rep := range reps {
		v := rep.id.String()
		ps := rep.chunks.Stats()
		st := rep.status()
		rep.mu.Lock()
		wanted := rep.wanted.len()
		rep.mu.Unlock()
		full := 0.0
		if st.Full {
			full = 1
		}
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(ps.BytesStored), v)
		ch <- prometheus.MustNewConstMetric(descDisk, prometheus.GaugeValue, float64(ps.BytesOnDisk), v)
		ch <- prometheus.MustNewConstMetric(descChunks, prometheus.GaugeValue, float64(ps.Chunks), v)
		ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(st.Entries), v)
		ch <- prometheus.MustNewConstMetric(descWanted, prometheus.GaugeValue, float64(wanted), v)
		ch <- prometheus.MustNewConstMetric(descFull, prometheus.GaugeValue, full, v)
		if q := ps.Requests; q != (chunkstore.Requests{}) {
			for kind, n := range map[string]uint64{"put": q.Put, "get": q.Get, "list": q.List, "delete": q.Delete} {
				ch <- prometheus.MustNewConstMetric(descObjReqs, prometheus.CounterValue, float64(n), v, kind)
			}
		}
		if at, ok, err := rep.chunks.LastScrub(); err == nil {
			last := 0.0
			if ok {
				last = float64(at.UnixMilli()) / 1000
			}
			ch <- prometheus.MustNewConstMetric(descScrub, prometheus.GaugeValue, last, v)
		}
	}
}

// ServeMetrics serves /metrics and the operator's /admin/ routes on addr
// until ctx ends. It returns the address it listens on (addr may name port
// 0) once listening. With a token, every request must carry
// "Authorization: Bearer TOKEN" (401 otherwise): for a metrics address
// reachable by more than the operator (docs/operations.md).
func (r *Relay) ServeMetrics(ctx context.Context, addr, token string) (net.Addr, error) {
	if err := r.stats.reg.Register(replicaCollector{r}); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.stats.reg, promhttp.HandlerOpts{}))
	// `weft relay scrub --metrics ADDR`: a whole scrub now, answered when
	// done (a POST, so a scraper or a browser prefetch never starts one).
	mux.HandleFunc("POST /admin/scrub", r.serveScrub)
	mux.HandleFunc("GET /admin/vaults", r.serveVaults)
	mux.HandleFunc("POST /admin/drop", r.serveDrop)
	// Cross-origin protection: without a token, a web page the operator
	// opens must not be able to POST /admin/drop (or start a scrub) to a
	// metrics address on 127.0.0.1: browsers send such a POST without
	// asking first.
	return serveHTTP(ctx, addr, "metrics", bearer(token, http.NewCrossOriginProtection().Handler(mux)))
}

// ServePprof serves Go's profiles (/debug/pprof/) on addr until ctx ends,
// for an operator chasing memory or CPU: an address of its own, so that
// the metrics address can be scraped by more than the operator without
// handing out profiles.
func (r *Relay) ServePprof(ctx context.Context, addr string) (net.Addr, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveHTTP(ctx, addr, "pprof", mux)
}

// serveHTTP serves h on addr until ctx ends.
func serveHTTP(ctx context.Context, addr, what string, h http.Handler) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener: %w", what, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return ln.Addr(), nil
}

// bearer requires "Authorization: Bearer token" of every request to h,
// compared in constant time; an empty token requires nothing.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weft relay"`)
			http.Error(w, "a bearer token is required (the relay's --metrics-token-file)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// serveScrub runs ScrubNow for POST /admin/scrub and answers its
// ScrubReport as JSON: 200 when every vault's pass finished, 500 (with
// the report so far) when one stopped on an error.
func (r *Relay) serveScrub(w http.ResponseWriter, req *http.Request) {
	rep, err := r.ScrubNow(req.Context())
	if err == nil {
		err = rep.Err()
	}
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		r.log.Warn("scrub asked for by the operator", "err", err)
		w.WriteHeader(http.StatusInternalServerError)
	}
	_ = json.NewEncoder(w).Encode(scrubAnswer{ScrubReport: rep, Error: errString(err)})
}

// scrubAnswer is the JSON body of POST /admin/scrub.
type scrubAnswer struct {
	ScrubReport
	Error string `json:"error,omitempty"`
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
