package node

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/home"
)

// The local HTTP API: on 127.0.0.1, a random port by default, guarded by a
// random bearer token. Both are written to the home (api.json, 0600) for
// the CLI. docs/api.md documents every endpoint and the status contract.

type apiServer struct {
	n     *Node
	ln    net.Listener
	addr  string
	token string
	srv   *http.Server
	mon   *monitor
}

func (n *Node) startAPI(ctx context.Context, addr string) (*apiServer, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("API address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("API address %q: only loopback addresses are allowed", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("starting the local API: %w", err)
	}
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		ln.Close()
		return nil, err
	}
	a := &apiServer{n: n, ln: ln, addr: ln.Addr().String(), token: hex.EncodeToString(tok[:]), mon: newMonitor(n)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("POST /v1/invite", a.invite)
	mux.HandleFunc("GET /v1/conflicts", a.conflicts)
	mux.HandleFunc("GET /v1/devices", a.devices)
	mux.HandleFunc("GET /v1/events", a.eventStream)
	mux.HandleFunc("POST /v1/scan", a.scan)
	mux.HandleFunc("POST /v1/vaults/load", a.loadVaults)
	mux.HandleFunc("GET /v1/doctor", a.doctor)
	mux.HandleFunc("GET /v1/history", a.history)
	mux.HandleFunc("POST /v1/restore", a.restore)
	mux.HandleFunc("GET /v1/relays", a.relaysList)
	mux.HandleFunc("POST /v1/relays", a.relaysChange)
	mux.HandleFunc("POST /v1/revoke", a.revoke)
	mux.HandleFunc("POST /v1/scrub", a.scrub)
	mux.HandleFunc("GET /v1/deletions", a.deletions)
	mux.HandleFunc("POST /v1/deletions", a.decideDeletions)
	mux.HandleFunc("POST /v1/folders/reset", a.folderReset)
	mux.HandleFunc("POST /v1/folders/guard", a.folderGuard)
	mux.HandleFunc("GET /v1/versions", a.versions)
	mux.HandleFunc("POST /v1/folders/versions", a.setVersionPolicy)
	mux.Handle("GET /metrics", a.mon.metrics.handler())
	a.srv = &http.Server{Handler: a.auth(a.waitOpen(mux)), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	if err := n.cfg.Home.WriteAPIInfo(home.APIInfo{Addr: a.addr, Token: a.token, PID: os.Getpid()}); err != nil {
		ln.Close()
		return nil, err
	}
	return a, nil
}

// serve answers the API until ctx ends; it returns once the monitor and
// the shutdown it starts have ended too.
func (a *apiServer) serve(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.mon.run(ctx) })
	wg.Go(func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = a.srv.Shutdown(sctx)
	})
	if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.n.log.Error("local API stopped", "err", err)
	}
	if err := a.n.cfg.Home.RemoveAPIInfo(); err != nil {
		a.n.log.Warn("removing API info", "err", err)
	}
}

// answersWhileOpening are the calls that do not need the vaults open:
// status shows the folders still opening, the event stream and metrics
// carry on as they come.
var answersWhileOpening = map[string]bool{"/v1/status": true, "/v1/events": true, "/metrics": true}

// waitOpen holds every other call until the vaults are open (Config.
// OpenInRun), so that none answers as if a folder still opening were not
// synced at all, and `weft join` cannot open a vault Run is opening.
func (a *apiServer) waitOpen(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !answersWhileOpening[r.URL.Path] {
			select {
			case <-a.n.opened:
			case <-r.Context().Done():
				http.Error(w, "the agent stopped while opening its folders", http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (a *apiServer) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			http.Error(w, "missing or wrong API token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Status is the shape of `weft status --json` and GET /v1/status.
type Status struct {
	Device  string         `json:"device"`
	Addrs   []string       `json:"addrs"`
	Folders []FolderStatus `json:"folders"`
	Peers   []PeerStatus   `json:"peers"`
}

// FolderStatus is one folder's state.
type FolderStatus struct {
	Path            string        `json:"path"`
	Vault           string        `json:"vault"`
	State           string        `json:"state"`           // error, held, scanning, syncing, offline, in-sync
	Error           string        `json:"error,omitempty"` // why, when State is "error"
	InitialScanDone bool          `json:"initial_scan_done"`
	Files           int           `json:"files"`
	Bytes           int64         `json:"bytes"`
	Pending         int           `json:"pending"`
	PendingApply    int           `json:"pending_apply"`
	PendingFetch    int           `json:"pending_fetch"`
	PendingUpload   int           `json:"pending_upload"`
	Unsafe          uint64        `json:"unsafe"`
	Written         uint64        `json:"written"` // this device's own entries, durable here
	Conflicts       int           `json:"conflicts"`
	Errors          []PathMessage `json:"errors"`
}

// PathMessage is a problem with one path, or with the whole folder when
// Path is empty. Code is stable (docs/api.md, "Error codes"); Reason is
// for a person.
type PathMessage struct {
	Code   string     `json:"code,omitempty"`
	Path   string     `json:"path"`
	Peer   string     `json:"peer,omitempty"` // the device or relay concerned, where one is
	Reason string     `json:"reason"`
	Since  *time.Time `json:"since,omitempty"` // when the problem began, where weft knows
}

// PeerStatus is one peer's state.
type PeerStatus struct {
	ID            string     `json:"id"`
	Role          string     `json:"role"`       // device, relay
	Connection    string     `json:"connection"` // lan, direct, holepunched, relayed, offline
	BytesSent     int64      `json:"bytes_sent"`
	BytesReceived int64      `json:"bytes_received"`
	MsgsSent      int64      `json:"messages_sent"`
	MsgsReceived  int64      `json:"messages_received"`
	InSync        bool       `json:"in_sync"`
	LastSeen      *time.Time `json:"last_seen"` // now while connected; null if never connected
}

// Status reports the node's state. docs/api.md is its contract.
func (n *Node) Status() Status {
	if m := n.monitor(); m != nil {
		// One status at a time while the problems are tracked: two
		// snapshots tracked out of order re-raised a cleared problem.
		m.statusMu.Lock()
		defer m.statusMu.Unlock()
	}
	st := Status{Device: n.id.ID().String(), Addrs: n.Addrs(), Folders: []FolderStatus{}, Peers: []PeerStatus{}}
	if st.Addrs == nil {
		st.Addrs = []string{}
	}
	members := map[keys.DeviceID]bool{}
	relays := map[keys.DeviceID]bool{}
	set := n.vaults.Load()
	for _, v := range set.list {
		fs := v.status()
		if len(n.connectedMembers(v)) == 0 && len(v.memberList()) > 1 && fs.State == "in-sync" {
			fs.State = "offline"
		}
		st.Folders = append(st.Folders, fs)
		for _, d := range v.memberList() {
			if d != n.id.ID() {
				members[d] = true
			}
		}
		for _, r := range v.relays() {
			relays[r.dev] = true
			members[r.dev] = true
		}
	}
	for _, hv := range set.opening {
		// Config.OpenInRun: the vault's graph is still being loaded.
		st.Folders = append(st.Folders, FolderStatus{Path: hv.Folder, Vault: hv.ID.String(), State: "opening", Errors: []PathMessage{}})
	}
	now := n.now().UTC()
	for d := range members {
		ps := n.peerState(d)
		role := "device"
		if relays[d] {
			role = "relay"
		}
		n.mu.Lock()
		p := PeerStatus{
			ID: d.String(), Role: role, Connection: "offline", InSync: n.peerInSync(d),
			BytesSent: ps.counters.bytesSent.Load(), BytesReceived: ps.counters.bytesReceived.Load(),
			MsgsSent: ps.counters.msgsSent.Load(), MsgsReceived: ps.counters.msgsReceived.Load(),
		}
		if ps.connected {
			p.Connection = ps.conn
			p.LastSeen = &now
		} else if !ps.lastSeen.IsZero() {
			t := ps.lastSeen.UTC()
			p.LastSeen = &t
		}
		n.mu.Unlock()
		st.Peers = append(st.Peers, p)
	}
	slices.SortFunc(st.Peers, func(a, b PeerStatus) int { return strings.Compare(a.ID, b.ID) })
	if m := n.monitor(); m != nil {
		m.problems.track(st.Folders, n.now(), n.events.publish) // problems.go
	}
	return st
}

// peerInSync reports whether d holds everything this device holds in every
// shared vault, as far as its last LogStatus said, or a relay said of it.
func (n *Node) peerInSync(d keys.DeviceID) bool {
	for _, v := range n.vaultsNow() {
		if !v.isPeer(d) {
			continue
		}
		mine := v.vector()
		v.mu.Lock()
		theirs := v.peerHoldsLocked(d) // directly, or through a relay (relayholds.go)
		v.mu.Unlock()
		for a, s := range mine {
			if theirs[a] < s {
				return false
			}
		}
	}
	return true
}

// status is the vault's part of the status.
func (v *vault) status() FolderStatus {
	var connected []keys.DeviceID
	for _, c := range v.n.connectedMembers(v) {
		connected = append(connected, c.dev)
	}
	unsafe := v.unsafeCount()
	relayFull, full := v.relayFullErrors() // relayfull.go
	// A relay whose quota is full takes nothing: what it lacks is not
	// on its way (doctor said "being sent").
	connected = slices.DeleteFunc(connected, func(d keys.DeviceID) bool { return full[d] })
	upload := v.toUpload(connected)
	view := v.summary()
	fs := FolderStatus{
		Path: v.cfg.Folder, Vault: v.id.String(), InitialScanDone: view.scanned,
		Files: view.files, Bytes: view.bytes, Conflicts: len(view.conflicts),
		PendingApply: view.toApply, PendingFetch: view.toFetch, PendingUpload: upload, Unsafe: unsafe,
		Written: v.db.Head(v.n.id.ID()).Seq, Errors: []PathMessage{},
	}
	// pending is what this device must still do itself; what peers
	// still need from it is pending_upload (and peers[].in_sync).
	fs.Pending = fs.PendingApply + fs.PendingFetch
	stop, stopped := v.stopped()
	if stopped {
		fs.Errors = append(fs.Errors, PathMessage{Code: stop.code, Reason: stop.message, Since: sinceOf(stop.since)})
	}
	home, homeFull := v.homeFaultNow()
	if homeFull {
		fs.Errors = append(fs.Errors, PathMessage{Code: codeHomeDiskFull, Reason: home.message, Since: sinceOf(home.since)})
	}
	held := v.heldErrors()
	fs.Errors = append(fs.Errors, held...)
	corrupt := v.corruptErrors()
	fs.Errors = append(fs.Errors, corrupt...)
	for _, p := range sortedKeys(view.errs) {
		fs.Errors = append(fs.Errors, PathMessage{Code: applyErrorCode(view.errs[p]), Path: p, Reason: view.errs[p]})
	}
	skipped := v.skippedErrors()
	fs.Errors = append(fs.Errors, skipped...)
	fs.Errors = append(fs.Errors, relayFull...)
	unwatched := v.fallbackErrors() // watchfallback.go
	fs.Errors = append(fs.Errors, unwatched...)
	switch {
	case stopped:
		fs.State, fs.Error = "error", stop.message
	case homeFull:
		fs.State, fs.Error = "error", home.message
	case view.scanning || !view.scanned:
		fs.State = "scanning"
	case stuck(fs.Errors) != "":
		fs.State, fs.Error = "error", stuck(fs.Errors)
	case len(held) > 0:
		fs.State = "held"
	case len(corrupt) > 0 && fs.Pending == 0:
		// A damaged file that is not being written again (it could not
		// be moved aside): nothing will fix it without the user.
		fs.State, fs.Error = "error", corrupt[0].Path+": "+corrupt[0].Reason
	case fs.Pending > 0:
		fs.State = "syncing"
	case len(skipped) > 0 || len(relayFull) > 0 || len(unwatched) > 0:
		// Everything else is done, but these paths cannot sync, a relay
		// takes none of what it lacks, or changes in part of the folder
		// are seen only by rescans.
		fs.State = "out-of-sync"
	default:
		fs.State = "in-sync"
	}
	v.logHealthStatus(&fs) // memberrecover.go, logtail.go
	return fs
}

// Status error codes of a path whose last apply failed (weft retries it).
const (
	codeFolderDiskFull   = "folder-disk-full"  // the folder's file system is full
	codeReadOnly         = "read-only"         // the folder's file system is read-only
	codePermission       = "permission-denied" // weft may not write there
	codeChunkUnavailable = "chunk-unavailable" // no connected peer or relay has a chunk
	codeLocalEdit        = "local-edit"        // the file changed here while it was being replaced
	codeApplyFailed      = "apply-failed"      // any other failure
)

// applyErrorCode is the code of a failed apply's reason.
func applyErrorCode(reason string) string {
	switch errorKind(reason) {
	case "disk-full":
		return codeFolderDiskFull
	case "read-only":
		return codeReadOnly
	case "permission":
		return codePermission
	case "chunk-unavailable":
		return codeChunkUnavailable
	case "local-edit":
		return codeLocalEdit
	}
	return codeApplyFailed
}

// sinceOf is t for PathMessage.Since, nil when unknown.
func sinceOf(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// Status error codes of paths the scanner skips.
const (
	codeCannotSync     = "cannot-sync" // a name other systems cannot hold (not NFC, reserved characters)
	codeTooLarge       = "too-large"   // over weft's size limit
	codePathUnreadable = "unreadable"  // weft may not read it
)

// maxSkippedShown bounds the skipped paths status lists one by one.
const maxSkippedShown = 100

// skippedErrors lists the paths the last scans skipped and will skip
// again until the user acts (a name that cannot sync, a file over the
// size limit, one weft may not read), each with its code. Before, status
// said in-sync with errors [] while they never reached another device.
func (v *vault) skippedErrors() []PathMessage {
	m := v.n.monitor()
	if m == nil {
		return nil
	}
	skipped, _, _, _ := m.scanProblems(v)
	var out []PathMessage
	more := 0
	for _, p := range sortedKeys(skipped) {
		code := codeCannotSync
		switch errorKind(skipped[p]) {
		case "local-edit":
			continue // settles by itself
		case "too-large":
			code = codeTooLarge
		case "permission":
			code = codePathUnreadable
		}
		if len(out) == maxSkippedShown {
			more++
			continue
		}
		out = append(out, PathMessage{Code: code, Path: p, Reason: skipped[p]})
	}
	if more > 0 {
		out = append(out, PathMessage{Code: codeCannotSync, Reason: fmt.Sprintf("and %d more paths that cannot sync (`weft doctor` lists them)", more)})
	}
	return out
}

// stuck names the first error that needs the user to act (a full disk,
// a permission, a read-only file system) rather than a retry, or "".
func stuck(errs []PathMessage) string {
	for _, e := range errs {
		switch errorKind(e.Reason) {
		case "disk-full", "permission", "read-only":
			return e.Path + ": " + e.Reason
		}
	}
	return ""
}

// isConflictCopy reports whether a path is named like a conflict copy
// (protocol.ConflictName).
func isConflictCopy(p string) bool { return strings.Contains(path.Base(p), ".conflict-") }

// isConflictCopyOf reports whether q is named like a conflict copy of p:
// in p's directory, p's stem, then ".conflict-" (protocol.ConflictName).
func isConflictCopyOf(q, p string) bool {
	stem := strings.TrimSuffix(path.Base(p), path.Ext(p))
	return path.Dir(q) == path.Dir(p) && strings.HasPrefix(path.Base(q), stem+".conflict-")
}

func (a *apiServer) status(w http.ResponseWriter, r *http.Request) { writeJSON(w, a.n.Status()) }

// InviteResponse is the answer of POST /v1/invite.
type InviteResponse struct {
	Code    string    `json:"code"`
	Expires time.Time `json:"expires"`
}

func (a *apiServer) invite(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Vault      string `json:"vault"`
		TTLSeconds int    `json:"ttl_seconds"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req)
	var vid keys.VaultID
	if req.Vault != "" {
		var err error
		if vid, err = keys.ParseVaultID(req.Vault); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	inv, err := a.n.Invite(vid, time.Duration(req.TTLSeconds)*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, InviteResponse{Code: inv.String(), Expires: time.Unix(inv.Expires, 0).UTC()})
}

// Conflict is one conflict copy in a folder.
type Conflict struct {
	Folder string `json:"folder"`
	Path   string `json:"path"`
}

func (a *apiServer) conflicts(w http.ResponseWriter, r *http.Request) {
	out := []Conflict{}
	for _, v := range a.n.vaultsNow() {
		v.mu.Lock()
		for p, r := range v.index {
			if r.Kind == entry.KindFile && isConflictCopy(p) {
				out = append(out, Conflict{Folder: v.cfg.Folder, Path: p})
			}
		}
		v.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Conflict) int { return strings.Compare(a.Folder+"\x00"+a.Path, b.Folder+"\x00"+b.Path) })
	writeJSON(w, out)
}

// Device is one member of a vault.
type Device struct {
	Folder string `json:"folder"`
	ID     string `json:"id"`
	Role   string `json:"role"`
	Self   bool   `json:"self"`
}

func (a *apiServer) devices(w http.ResponseWriter, r *http.Request) {
	out := []Device{}
	for _, v := range a.n.vaultsNow() {
		for _, d := range v.memberList() {
			role, _ := v.role(d)
			out = append(out, Device{Folder: v.cfg.Folder, ID: d.String(), Role: role.String(), Self: d == a.n.id.ID()})
		}
	}
	writeJSON(w, out)
}

// VaultsLoaded is the answer of POST /v1/vaults/load: the folders of
// vaults the agent started syncing (added to the home since it started).
type VaultsLoaded struct {
	Added []string `json:"added"`
}

// loadVaults starts syncing the vaults added to the home since the agent
// started (`weft join` and `weft init` call it). Vaults that opened are
// syncing even when another failed; the failure is the error.
func (a *apiServer) loadVaults(w http.ResponseWriter, r *http.Request) {
	added, err := a.n.AddNewVaults()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, VaultsLoaded{Added: append([]string{}, added...)})
}

// ScanRequest is the body of POST /v1/scan: an absolute path inside a
// synced folder, or empty for every folder.
type ScanRequest struct {
	Path string `json:"path,omitempty"`
}

// ScanResult is what one scan found.
type ScanResult struct {
	Folder string `json:"folder"`
	// Path is the scanned path relative to the folder ("" for all of it).
	Path string `json:"path"`
	// Files, Dirs and Bytes count what the scan saw on disk.
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Bytes int64 `json:"bytes"`
	// Changes counts the changes recorded; Changed lists the first 1000.
	Changes int          `json:"changes"`
	Changed []ScanChange `json:"changed"`
	// Unsettled lists files that changed while being read (recorded once
	// quiet); Skipped the paths that could not be taken, with why.
	Unsettled []string      `json:"unsettled"`
	Skipped   []PathMessage `json:"skipped"`
	// Ignored is true when Path is excluded by the ignore rules.
	Ignored bool  `json:"ignored,omitempty"`
	Millis  int64 `json:"millis"`
}

// ScanChange is one recorded change.
type ScanChange struct {
	Path   string `json:"path"`
	Change string `json:"change"` // added, modified, deleted, kind-changed
}

func (a *apiServer) scan(w http.ResponseWriter, r *http.Request) {
	var req ScanRequest
	if r.ContentLength != 0 {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			http.Error(w, "scan request: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	vaults, rel := a.n.vaultsNow(), ""
	if req.Path != "" {
		v, p, err := a.n.resolvePath(req.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		vaults, rel = []*vault{v}, p
	}
	out := []ScanResult{}
	for _, v := range vaults {
		res, err := a.n.scanNoted(r.Context(), v, rel, req.Path != "")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out = append(out, res)
		a.n.events.publish(Event{Type: EventScanned, Folder: v.cfg.Folder, Path: res.Path, Count: res.Changes, Kind: "api"})
	}
	writeJSON(w, out)
}

func (a *apiServer) doctor(w http.ResponseWriter, r *http.Request) {
	d, err := a.n.Diagnose(r.Context(), r.URL.Query().Get("path"))
	if errors.Is(err, errNotInFolder) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, d)
}

func (a *apiServer) eventStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	c, cancel := a.n.events.subscribe()
	defer cancel()
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-c:
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
			fl.Flush()
		}
	}
}
