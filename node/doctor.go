package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// Diagnosis is the answer of `weft doctor` and GET /v1/doctor: the facts
// it looked at and its findings, most severe first.
type Diagnosis struct {
	Time time.Time `json:"time"`
	// Folder and Path name what was asked about ("" for everything).
	Folder   string            `json:"folder,omitempty"`
	Path     string            `json:"path,omitempty"`
	Healthy  bool              `json:"healthy"` // no finding of severity "problem"
	Folders  []FolderDiagnosis `json:"folders"`
	Peers    []PeerDiagnosis   `json:"peers"`
	Findings []Finding         `json:"findings"`
	// ClockCorrectionMillis is how far this device moves its own clock to
	// date the entries it writes: the median of its members' measured
	// offsets (node/clock.go; docs/sync.md, "Clocks").
	ClockCorrectionMillis int64 `json:"clock_correction_ms"`
}

// FolderDiagnosis is one folder's health.
type FolderDiagnosis struct {
	Path           string        `json:"path"`
	State          string        `json:"state"`
	PendingApply   int           `json:"pending_apply"`
	PendingFetch   int           `json:"pending_fetch"`
	PendingUpload  int           `json:"pending_upload"`
	Unsafe         uint64        `json:"unsafe"`
	Watcher        WatcherHealth `json:"watcher"`
	DiskFreeBytes  int64         `json:"disk_free_bytes"`  // 0 when unknown
	DiskTotalBytes int64         `json:"disk_total_bytes"` // 0 when unknown
}

// WatcherHealth is the state of a folder's file watcher.
type WatcherHealth struct {
	Enabled bool `json:"enabled"`
	// MaxUserWatches is /proc/sys/fs/inotify/max_user_watches (0 when
	// unknown or not Linux); each directory takes one watch.
	MaxUserWatches  int    `json:"max_user_watches"`
	Directories     int    `json:"directories"`
	OverflowRescans int    `json:"overflow_rescans"`
	Failed          string `json:"failed,omitempty"`
}

// PeerDiagnosis is how one member is reached.
type PeerDiagnosis struct {
	ID         string     `json:"id"`
	Connection string     `json:"connection"` // as in the status
	Reachable  bool       `json:"reachable"`
	Addrs      []string   `json:"addrs"` // where this device remembers it listens
	LastSeen   *time.Time `json:"last_seen"`
	InSync     bool       `json:"in_sync"`
	// RTTMillis is a ping's round trip now (or the peerstore's moving
	// average if the ping failed); null when not connected.
	RTTMillis *float64 `json:"rtt_ms"`
	// Throughput of application payload over ThroughputSeconds (up to the
	// last minute).
	SentBytesPerSec   float64 `json:"sent_bytes_per_sec"`
	RecvBytesPerSec   float64 `json:"received_bytes_per_sec"`
	ThroughputSeconds float64 `json:"throughput_seconds"`
	// ClockSkewMillis is how far the peer's clock is ahead of this
	// device's (negative: behind), measured NTP fashion over
	// /weft/clock/1 (node/clock.go) while doctor runs, or else the last
	// measurement; null when the peer was never measured.
	ClockSkewMillis *int64 `json:"clock_skew_ms"`
	// ClockErrorMillis bounds the error of ClockSkewMillis: half the
	// round trip of the probe it comes from.
	ClockErrorMillis *float64 `json:"clock_error_ms,omitempty"`

	// selfCorrection is this device's clock correction (Diagnosis.
	// ClockCorrectionMillis), for the clock-skew rule.
	selfCorrection time.Duration
}

// errNotInFolder means a path is outside every synced folder.
var errNotInFolder = errors.New("not inside any synced folder")

// resolvePath finds the vault whose folder holds abs (an absolute path on
// disk) and returns the path relative to it, slash-separated ("" for the
// folder itself).
func (n *Node) resolvePath(abs string) (*vault, string, error) {
	try := func(p string) (*vault, string, bool) {
		for _, v := range n.vaultsNow() {
			for _, root := range []string{v.cfg.Folder, evalOr(v.cfg.Folder)} {
				rel, err := filepath.Rel(root, p)
				if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					continue
				}
				if rel == "." {
					rel = ""
				}
				return v, filepath.ToSlash(rel), true
			}
		}
		return nil, "", false
	}
	p := filepath.Clean(abs)
	if v, rel, ok := try(p); ok {
		return v, rel, nil
	}
	if v, rel, ok := try(evalOr(p)); ok {
		return v, rel, nil
	}
	var folders []string
	for _, v := range n.vaultsNow() {
		folders = append(folders, v.cfg.Folder)
	}
	return nil, "", fmt.Errorf("%s: %w (folders: %s)", abs, errNotInFolder, strings.Join(folders, ", "))
}

// evalOr resolves symlinks in p, or returns p.
func evalOr(p string) string {
	if e, err := filepath.EvalSymlinks(p); err == nil {
		return e
	}
	return p
}

// Diagnose answers "why is this not in sync?" for every folder, or for
// one path (absolute, on disk) when abs is not empty. It rescans what it
// looks at first, so its answer is current.
func (n *Node) Diagnose(ctx context.Context, abs string) (Diagnosis, error) {
	d := Diagnosis{Time: n.now().UTC(), Folders: []FolderDiagnosis{}, Peers: []PeerDiagnosis{}, Findings: []Finding{}}
	facts := doctorFacts{}
	vaults := n.vaultsNow()
	var asked string
	if abs != "" {
		v, rel, err := n.resolvePath(abs)
		if err != nil {
			return d, err
		}
		vaults, asked = []*vault{v}, rel
		d.Folder, d.Path, facts.path = v.cfg.Folder, rel, rel
	}
	for _, v := range vaults {
		if _, err := n.scanNoted(ctx, v, asked, abs != ""); err != nil && ctx.Err() != nil {
			return d, err
		}
	}
	facts.peers = n.diagnosePeers(ctx, vaults)
	st := n.Status()
	for _, v := range vaults {
		fs := st.Folders[slices.Index(n.vaultsNow(), v)]
		facts.folders = append(facts.folders, n.folderFacts(v, fs, asked, abs != "", facts.peers))
	}
	for _, fo := range facts.folders {
		d.Folders = append(d.Folders, fo.FolderDiagnosis)
	}
	d.Peers = facts.peers
	d.ClockCorrectionMillis = n.clocks.correction(n.now()).Milliseconds()
	d.Findings = diagnose(facts)
	d.Healthy = !hasSeverity(d.Findings, SeverityProblem)
	return d, nil
}

// scanNoted scans v (or one path of it) and notes what the scan skipped.
func (n *Node) scanNoted(ctx context.Context, v *vault, rel string, onePath bool) (ScanResult, error) {
	var paths []string
	if onePath {
		paths = []string{rel}
	}
	start := time.Now()
	res, err := v.scan(ctx, paths)
	if err != nil {
		return ScanResult{}, err
	}
	if m := n.monitor(); m != nil {
		m.noteScanResult(v, paths, res)
		m.metrics.scanSeconds.WithLabelValues(v.cfg.Folder, scanScope(paths)).Observe(time.Since(start).Seconds())
	}
	out := ScanResult{
		Folder: v.cfg.Folder, Path: rel, Files: res.Files, Dirs: res.Dirs, Bytes: res.Bytes,
		Changes: len(res.Changes), Changed: []ScanChange{}, Unsettled: res.Unsettled, Skipped: []PathMessage{},
		Millis: time.Since(start).Milliseconds(),
	}
	if out.Unsettled == nil {
		out.Unsettled = []string{}
	}
	for i, c := range res.Changes {
		if i == maxChangesListed {
			break
		}
		out.Changed = append(out.Changed, ScanChange{Path: c.Path, Change: c.Type.String()})
	}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, PathMessage{Path: s.Path, Reason: s.Err.Error()})
	}
	if onePath && rel != "" {
		isDir := false
		if info, err := v.fs.Lstat(rel); err == nil {
			isDir = info.Kind == folder.KindDir
		}
		out.Ignored = v.ignored(rel, isDir)
	}
	return out, nil
}

// maxChangesListed bounds the changes a scan result lists by path.
const maxChangesListed = 1000

func (n *Node) folderFacts(v *vault, fs FolderStatus, asked string, onePath bool, peers []PeerDiagnosis) folderFacts {
	view := v.view()
	fo := folderFacts{
		FolderDiagnosis: FolderDiagnosis{
			Path: fs.Path, State: fs.State, PendingApply: fs.PendingApply, PendingFetch: fs.PendingFetch,
			PendingUpload: fs.PendingUpload, Unsafe: fs.Unsafe,
			Watcher: WatcherHealth{Enabled: !n.cfg.NoWatcher && n.cfg.FolderFS == nil, MaxUserWatches: maxUserWatches(), Directories: view.dirs + 1},
		},
		errs: view.errs, conflicts: view.conflicts, anyPeer: len(n.connectedMembers(v)) > 0, shared: len(v.memberList()) > 1,
	}
	for _, e := range fs.Errors {
		if e.Code != "" {
			fo.coded = append(fo.coded, e)
		}
	}
	if n.cfg.FolderFS == nil {
		fo.DiskFreeBytes, fo.DiskTotalBytes = diskSpace(v.cfg.Folder)
	}
	for _, r := range n.Relays() {
		if r.Folder == v.cfg.Folder {
			fo.relays = append(fo.relays, r)
		}
	}
	fo.rollbacks = v.relayRollbacks()
	fo.versions = v.versionsInfo()
	if m := n.monitor(); m != nil {
		fo.skipped, fo.unsettled, fo.Watcher.OverflowRescans, fo.Watcher.Failed = m.scanProblems(v)
	}
	withHolders := func(pv pathView) pathFacts {
		pf := pathFacts{pathView: pv}
		if pv.heads > 0 {
			for _, h := range v.holders(pv.winner) {
				if h != n.id.ID() {
					pf.holders = append(pf.holders, h.String())
				}
			}
		}
		return pf
	}
	if onePath {
		pf := withHolders(v.pathState(asked))
		fo.asked = &pf
		isDir := pf.indexed && pf.kind == entry.KindDir
		if info, err := v.fs.Lstat(asked); err == nil {
			isDir = info.Kind == folder.KindDir
		}
		fo.ignored = asked != "" && v.ignored(asked, isDir)
		return fo
	}
	pending := slices.Clone(view.dirty)
	for p := range view.errs {
		if !slices.Contains(pending, p) {
			pending = append(pending, p)
		}
	}
	slices.Sort(pending)
	if len(pending) > maxPendingShown {
		fo.more = len(pending) - maxPendingShown
		pending = pending[:maxPendingShown]
	}
	for _, p := range pending {
		fo.pending = append(fo.pending, withHolders(v.pathState(p)))
	}
	return fo
}

// diagnosePeers describes every other member of vaults, pinging the
// connected ones (at most 2 s, all at once).
func (n *Node) diagnosePeers(ctx context.Context, vaults []*vault) []PeerDiagnosis {
	known := map[keys.DeviceID][]string{}
	var devs []keys.DeviceID
	for _, v := range vaults {
		kp := v.knownPeers()
		for _, d := range v.memberList() {
			if d == n.id.ID() || slices.Contains(devs, d) {
				continue
			}
			devs = append(devs, d)
			known[d] = kp[d]
		}
	}
	st := n.Status()
	out := make([]PeerDiagnosis, len(devs))
	var wg sync.WaitGroup
	for i, d := range devs {
		p := PeerDiagnosis{ID: d.String(), Connection: "offline", Addrs: known[d]}
		if p.Addrs == nil {
			p.Addrs = []string{}
		}
		for _, ps := range st.Peers {
			if ps.ID == p.ID {
				p.Connection, p.LastSeen, p.InSync = ps.Connection, ps.LastSeen, ps.InSync
			}
		}
		pid, err := PeerIDOf(d)
		p.Reachable = err == nil && n.host.Network().Connectedness(pid) == network.Connected
		if m := n.monitor(); m != nil {
			p.SentBytesPerSec, p.RecvBytesPerSec, _ = m.throughput(d)
			_, _, over := m.throughput(d)
			p.ThroughputSeconds = over.Seconds()
		}
		if s, ok := n.clocks.sample(d); ok {
			p.ClockSkewMillis, p.ClockErrorMillis = skewFields(s)
		}
		out[i] = p
		if p.Reachable {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				if s, err := n.measureClock(pctx, d); err == nil {
					out[i].ClockSkewMillis, out[i].ClockErrorMillis = skewFields(s)
				}
				rtt := n.host.Peerstore().LatencyEWMA(pid)
				if r, ok := <-ping.Ping(pctx, n.host, pid); ok && r.Error == nil {
					rtt = r.RTT
				}
				if rtt > 0 {
					ms := float64(rtt.Microseconds()) / 1000
					out[i].RTTMillis = &ms
				}
			})
		}
	}
	wg.Wait()
	corr := n.clocks.correction(n.now())
	for i := range out {
		out[i].selfCorrection = corr
	}
	slices.SortFunc(out, func(a, b PeerDiagnosis) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// maxUserWatches reads the per-user inotify watch limit (Linux only).
func maxUserWatches() int {
	if runtime.GOOS != "linux" {
		return 0
	}
	// The system-wide sysctl, and since Linux 5.11 the limit of the user
	// namespace weft runs in; the lower one applies.
	n := 0
	for _, f := range []string{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"} {
		if m := readLimit(f); m > 0 && (n == 0 || m < n) {
			n = m
		}
	}
	return n
}

// readLimit reads a number from a /proc/sys file; 0 when unknown.
func readLimit(f string) int {
	b, err := os.ReadFile(f)
	if err != nil {
		return 0
	}
	m, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return m
}
