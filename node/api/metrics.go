package api

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// MetricsSource is what the metrics read from the agent at scrape time.
// Its methods are called from the scraping goroutine.
type MetricsSource interface {
	Status() Status
	// FolderGauges are the gauges of each folder that its status does not
	// carry, by folder path.
	FolderGauges() map[string]FolderGauges
	Counters() Counters
	Versions() []VersionsInfo
}

// FolderGauges are a folder's gauges beyond its status.
type FolderGauges struct {
	Dirs int // directories, as indexed
	// Unwatched is how many subtrees the watcher cannot watch; -1 when
	// the whole folder is not watched.
	Unwatched int
}

// Counters are the agent's counters since it started.
type Counters struct {
	ChunksServed, ChunksFetched, ChunkBytesFetched uint64
	VersionScrubBytes, VersionCorrupt              uint64
}

// Metrics is the agent's Prometheus registry (private: nothing registers
// into the process-wide default) and the counters fed by events. Gauges
// and per-peer counters are read from the MetricsSource at scrape time,
// so they are exact rather than sampled. docs/api.md lists every metric.
// Its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	entriesWritten  *prometheus.CounterVec
	entriesReceived *prometheus.CounterVec
	entriesSafe     *prometheus.CounterVec
	versionsWritten *prometheus.CounterVec
	filesApplied    *prometheus.CounterVec
	bytesApplied    *prometheus.CounterVec
	conflicts       *prometheus.CounterVec
	errors          *prometheus.CounterVec
	problems        *prometheus.CounterVec
	localChanges    *prometheus.CounterVec
	watcherRescans  *prometheus.CounterVec
	transfers       *prometheus.CounterVec
	scrubBytes      *prometheus.CounterVec
	corruptFiles    *prometheus.CounterVec
	scanSeconds     *prometheus.HistogramVec
	applySeconds    *prometheus.HistogramVec
	transferSeconds *prometheus.HistogramVec
}

// NewMetrics registers every metric of the agent, the Go runtime's and
// the process's, and extra (collectors of the agent's own, such as its
// refused streams), reading gauges from src.
func NewMetrics(src MetricsSource, extra ...prometheus.Collector) *Metrics {
	reg := prometheus.NewRegistry()
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "weft", Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "weft", Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. ~4.4 min
		}, labels)
		reg.MustRegister(h)
		return h
	}
	mt := &Metrics{
		reg:             reg,
		entriesWritten:  counter("entries_written_total", "Log entries this device wrote.", "folder"),
		versionsWritten: counter("versions_written_total", "Versions in the log entries this device wrote.", "folder"),
		entriesReceived: counter("entries_received_total", "Log entries received from peers and stored.", "folder"),
		entriesSafe:     counter("entries_safe_total", "This device's own entries that another device confirmed it holds.", "folder"),
		filesApplied:    counter("files_applied_total", "Files, symlinks and deletions written to the folder from remote versions.", "folder", "kind"),
		bytesApplied:    counter("bytes_applied_total", "Bytes of file content written to the folder from remote versions.", "folder"),
		conflicts:       counter("conflicts_total", "Conflict copies written.", "folder"),
		errors:          counter("errors_total", "Errors (failed applies, unreadable paths, watcher failures).", "folder", "kind"),
		problems:        counter("problems_total", "Status errors[] items that appeared, by code (docs/api.md, \"Error codes\").", "folder", "code"),
		localChanges:    counter("local_changes_total", "Changes the scanner found on disk.", "folder", "change"),
		watcherRescans:  counter("watcher_rescans_total", "Full rescans the watcher asked for because it lost events (inotify overflow).", "folder"),
		transfers:       counter("transfers_total", "Chunk transfers from peers, by outcome.", "folder", "outcome"),
		scrubBytes:      counter("scrub_verified_bytes_total", "Bytes of unchanged files the scrub re-read and checked against their recorded hash.", "folder"),
		corruptFiles:    counter("corrupt_files_total", "Files found damaged on disk (content changed without an edit) and written again.", "folder"),
		scanSeconds:     hist("scan_duration_seconds", "Duration of scans, full or of changed paths.", "folder", "scope"),
		applySeconds:    hist("apply_duration_seconds", "Duration of reconciling one path.", "folder"),
		transferSeconds: hist("transfer_duration_seconds", "Duration of one chunk transfer from a peer.", "folder"),
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(&stateCollector{src: src})
	reg.MustRegister(extra...)
	return mt
}

// Count updates the event counters with ev.
func (mt *Metrics) Count(ev Event) {
	switch ev.Type {
	case EventEntryWritten:
		mt.entriesWritten.WithLabelValues(ev.Folder).Inc()
		mt.versionsWritten.WithLabelValues(ev.Folder).Add(float64(ev.Count))
	case EventEntryReceived:
		mt.entriesReceived.WithLabelValues(ev.Folder).Inc()
	case EventApplied:
		mt.filesApplied.WithLabelValues(ev.Folder, ev.Kind).Inc()
		mt.bytesApplied.WithLabelValues(ev.Folder).Add(float64(ev.Bytes))
	case EventConflict:
		mt.conflicts.WithLabelValues(ev.Folder).Inc()
	case EventProblem:
		mt.problems.WithLabelValues(ev.Folder, ev.Kind).Inc()
	case EventError:
		kind := ev.Kind
		if kind == "" {
			kind = "apply"
		}
		mt.errors.WithLabelValues(ev.Folder, kind).Inc()
	case EventLocalChange:
		mt.localChanges.WithLabelValues(ev.Folder, ev.Kind).Inc()
	case EventWatcherRescan:
		mt.watcherRescans.WithLabelValues(ev.Folder).Inc()
	case EventScrubbed:
		mt.scrubBytes.WithLabelValues(ev.Folder).Add(float64(ev.Bytes))
	case EventCorrupt:
		mt.corruptFiles.WithLabelValues(ev.Folder).Inc()
	case EventTransferFinished:
		outcome := "ok"
		if ev.Error != "" {
			outcome = "failed"
		}
		mt.transfers.WithLabelValues(ev.Folder, outcome).Inc()
	}
}

// CountSafe adds n entries of this device's own that another device
// confirmed it holds (they are not events of their own).
func (mt *Metrics) CountSafe(folder string, n uint64) {
	mt.entriesSafe.WithLabelValues(folder).Add(float64(n))
}

// ObserveScan records how long a scan of folder took; scope is "full" or
// "paths".
func (mt *Metrics) ObserveScan(folder, scope string, d time.Duration) {
	mt.scanSeconds.WithLabelValues(folder, scope).Observe(d.Seconds())
}

// ObserveApply records how long reconciling one path of folder took.
func (mt *Metrics) ObserveApply(folder string, d time.Duration) {
	mt.applySeconds.WithLabelValues(folder).Observe(d.Seconds())
}

// ObserveTransfer records how long one chunk transfer of folder took.
func (mt *Metrics) ObserveTransfer(folder string, d time.Duration) {
	mt.transferSeconds.WithLabelValues(folder).Observe(d.Seconds())
}

// Handler answers a scrape.
func (mt *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(mt.reg, promhttp.HandlerOpts{Registry: mt.reg})
}

// Gather collects every metric now, as a scrape would.
func (mt *Metrics) Gather() ([]*dto.MetricFamily, error) { return mt.reg.Gather() }

var (
	descFiles        = prometheus.NewDesc("weft_folder_files", "Files in the folder, as indexed.", []string{"folder"}, nil)
	descBytes        = prometheus.NewDesc("weft_folder_bytes", "Bytes of the files in the folder, as indexed.", []string{"folder"}, nil)
	descDirs         = prometheus.NewDesc("weft_folder_directories", "Directories in the folder, as indexed.", []string{"folder"}, nil)
	descPending      = prometheus.NewDesc("weft_folder_pending", "Pending items by kind: apply (paths), fetch (chunks), upload (entries a connected peer lacks).", []string{"folder", "kind"}, nil)
	descUnsafe       = prometheus.NewDesc("weft_folder_unsafe_entries", "This device's own entries no other device is known to hold.", []string{"folder"}, nil)
	descConflictsNow = prometheus.NewDesc("weft_folder_conflict_copies", "Conflict copies present in the folder.", []string{"folder"}, nil)
	descErrorsNow    = prometheus.NewDesc("weft_folder_errors", "Items in the folder's status errors[] (see weft_folder_error_codes).", []string{"folder"}, nil)
	descErrorCodes   = prometheus.NewDesc("weft_folder_error_codes", "The folder's status errors[] items by code (docs/api.md, \"Error codes\"); only codes present now are listed.", []string{"folder", "code"}, nil)
	descUnwatched    = prometheus.NewDesc("weft_watcher_unwatched_directories", "Subtrees of the folder the watcher cannot watch (the system's watch limit), rescanned instead; -1 when the whole folder is not watched.", []string{"folder"}, nil)
	descState        = prometheus.NewDesc("weft_folder_state", "1 for the folder's current state, 0 for the others.", []string{"folder", "state"}, nil)
	descPeerUp       = prometheus.NewDesc("weft_peer_connected", "1 when the peer is connected, by connection kind (lan, direct, holepunched, relayed); 0 with kind offline.", []string{"peer", "connection"}, nil)
	descPeerInSync   = prometheus.NewDesc("weft_peer_in_sync", "1 when the peer holds everything this device holds, as far as it knows.", []string{"peer"}, nil)
	descBytesSent    = prometheus.NewDesc("weft_peer_sent_bytes_total", "Application payload bytes sent to the peer (framing not included).", []string{"peer"}, nil)
	descBytesRecv    = prometheus.NewDesc("weft_peer_received_bytes_total", "Application payload bytes received from the peer (framing not included).", []string{"peer"}, nil)
	descMsgsSent     = prometheus.NewDesc("weft_peer_sent_messages_total", "Frames sent to the peer.", []string{"peer"}, nil)
	descMsgsRecv     = prometheus.NewDesc("weft_peer_received_messages_total", "Frames received from the peer.", []string{"peer"}, nil)
	descChunksServed = prometheus.NewDesc("weft_chunks_served_total", "Chunks this device served to peers.", nil, nil)
	descChunksFetch  = prometheus.NewDesc("weft_chunks_fetched_total", "Chunks fetched from peers.", nil, nil)
	descChunkBytes   = prometheus.NewDesc("weft_chunk_fetched_bytes_total", "Sealed bytes of the chunks fetched from peers.", nil, nil)

	descVersions        = prometheus.NewDesc("weft_versions_kept", "Versions named in the folder's local version store.", []string{"folder"}, nil)
	descVersionBytes    = prometheus.NewDesc("weft_versions_bytes", "Bytes of chunks in the folder's local version store, each counted once.", []string{"folder"}, nil)
	descVersionBudget   = prometheus.NewDesc("weft_versions_budget_bytes", "The folder's local version store budget.", []string{"folder"}, nil)
	descVersionScrubbed = prometheus.NewDesc("weft_versions_scrub_verified_bytes_total", "Bytes of the local version stores the scrub re-read and verified.", nil, nil)
	descVersionCorrupt  = prometheus.NewDesc("weft_versions_corrupt_chunks_total", "Chunks of the local version stores found corrupt and dropped (fetched again from peers).", nil, nil)
)

// folderStates are the values of FolderStatus.State.
var folderStates = []string{"scanning", "syncing", "in-sync", "out-of-sync", "offline", "held", "error"}

// stateCollector reads gauges and per-peer counters from the source at
// scrape time.
type stateCollector struct{ src MetricsSource }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFiles, descBytes, descDirs, descPending, descUnsafe, descConflictsNow, descErrorsNow, descErrorCodes, descUnwatched, descState,
		descPeerUp, descPeerInSync, descBytesSent, descBytesRecv, descMsgsSent, descMsgsRecv, descChunksServed, descChunksFetch, descChunkBytes,
		descVersions, descVersionBytes, descVersionBudget, descVersionScrubbed, descVersionCorrupt} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Status()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	count := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	// By folder, not by position: a vault added or removed since Status
	// would shift the list.
	byFolder := c.src.FolderGauges()
	for _, f := range st.Folders {
		fg, ok := byFolder[f.Path]
		if !ok {
			continue
		}
		gauge(descFiles, float64(f.Files), f.Path)
		gauge(descBytes, float64(f.Bytes), f.Path)
		gauge(descDirs, float64(fg.Dirs), f.Path)
		gauge(descPending, float64(f.PendingApply), f.Path, "apply")
		gauge(descPending, float64(f.PendingFetch), f.Path, "fetch")
		gauge(descPending, float64(f.PendingUpload), f.Path, "upload")
		gauge(descUnsafe, float64(f.Unsafe), f.Path)
		gauge(descConflictsNow, float64(f.Conflicts), f.Path)
		gauge(descErrorsNow, float64(len(f.Errors)), f.Path)
		gauge(descUnwatched, float64(fg.Unwatched), f.Path)
		byCode := map[string]int{}
		for _, e := range f.Errors {
			byCode[e.Code]++
		}
		for code, k := range byCode {
			gauge(descErrorCodes, float64(k), f.Path, code)
		}
		for _, s := range folderStates {
			v := 0.0
			if s == f.State {
				v = 1
			}
			gauge(descState, v, f.Path, s)
		}
	}
	for _, p := range st.Peers {
		up := 0.0
		if p.Connection != "offline" {
			up = 1
		}
		gauge(descPeerUp, up, p.ID, p.Connection)
		inSync := 0.0
		if p.InSync {
			inSync = 1
		}
		gauge(descPeerInSync, inSync, p.ID)
		count(descBytesSent, float64(p.BytesSent), p.ID)
		count(descBytesRecv, float64(p.BytesReceived), p.ID)
		count(descMsgsSent, float64(p.MsgsSent), p.ID)
		count(descMsgsRecv, float64(p.MsgsReceived), p.ID)
	}
	cs := c.src.Counters()
	count(descChunksServed, float64(cs.ChunksServed))
	count(descChunksFetch, float64(cs.ChunksFetched))
	count(descChunkBytes, float64(cs.ChunkBytesFetched))
	for _, in := range c.src.Versions() {
		gauge(descVersions, float64(in.Versions), in.Folder)
		gauge(descVersionBytes, float64(in.Bytes), in.Folder)
		gauge(descVersionBudget, float64(in.BudgetBytes), in.Folder)
	}
	count(descVersionScrubbed, float64(cs.VersionScrubBytes))
	count(descVersionCorrupt, float64(cs.VersionCorrupt))
}
