package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// handlers are the endpoints that read a request or stream an answer.
type handlers struct{ b Backend }

func (h handlers) invite(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Vault      string `json:"vault"`
		TTLSeconds int    `json:"ttl_seconds"`
		Confirm    bool   `json:"confirm"`
	}
	// An empty or unreadable body asks for the defaults.
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req)
	vid, ok := vaultID(w, req.Vault)
	if !ok {
		return
	}
	inv, err := h.b.Invite(vid, time.Duration(req.TTLSeconds)*time.Second, req.Confirm)
	if err != nil {
		fail(w, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, inv)
}

func (h handlers) decideJoin(w http.ResponseWriter, r *http.Request, approve bool) {
	var req JoinDecision
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.Device == "" {
		fail(w, fmt.Errorf("want a JSON body {\"device\": PEERID or a prefix}"), http.StatusBadRequest)
		return
	}
	j, err := h.b.DecideJoin(req, approve)
	if err != nil {
		fail(w, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, j)
}

// vaultID parses a vault ID of a request; "" is the zero ID (the only
// vault).
func vaultID(w http.ResponseWriter, s string) (keys.VaultID, bool) {
	if s == "" {
		return keys.VaultID{}, true
	}
	vid, err := keys.ParseVaultID(s)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return vid, false
	}
	return vid, true
}

// eventStream answers GET /v1/events: server-sent events, each with its
// ID, from after ?since=ID or the Last-Event-ID header (a reconnecting
// EventSource sends it) or from now; ?type=a,b (or ?types=) and
// ?folder=F keep only those (events-missed always passes).
func (h handlers) eventStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	since := q.Get("since")
	if since == "" {
		since = r.Header.Get("Last-Event-ID")
	}
	var after uint64
	if since != "" {
		n, err := strconv.ParseUint(since, 10, 64)
		if err != nil {
			fail(w, Classified(ErrInvalid, "since: want an event ID (a number)"), http.StatusBadRequest)
			return
		}
		after = n
	}
	types := map[EventType]bool{}
	for _, t := range strings.Split(q.Get("type")+","+q.Get("types"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			types[EventType(t)] = true
		}
	}
	folder := q.Get("folder")
	if folder != "" {
		f, ok := syncedFolder(h.b.Status(), folder)
		if !ok {
			fail(w, Classified(ErrInvalid, "folder: not a synced folder of this agent: "+folder), http.StatusBadRequest)
			return
		}
		folder = f
	}
	keep := func(ev Event) bool {
		if ev.Type == EventMissed {
			return true
		}
		return (len(types) == 0 || types[ev.Type]) && (folder == "" || ev.Folder == folder)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	cur := h.b.EventCursor(after)
	fl.Flush()
	for {
		ev, err := cur.Next(r.Context())
		if err != nil {
			return
		}
		if !keep(ev) {
			continue
		}
		b, _ := json.Marshal(ev)
		if ev.ID != 0 {
			fmt.Fprintf(w, "id: %d\n", ev.ID)
		}
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		fl.Flush()
	}
}

// syncedFolder is the synced folder of st that dir names, as the agent
// names it (events carry that name): the same path, or one that resolves
// to the same place through symbolic links.
func syncedFolder(st Status, dir string) (string, bool) {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	for _, f := range st.Folders {
		if filepath.Clean(f.Path) == filepath.Clean(dir) || real(f.Path) == real(dir) {
			return f.Path, true
		}
	}
	return "", false
}

func (h handlers) scan(w http.ResponseWriter, r *http.Request) {
	var req ScanRequest
	if !decode(w, r, 64<<10, "scan request", true, &req) {
		return
	}
	out, err := h.b.Scan(r.Context(), req)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, out)
}

// loadVaults starts syncing the vaults added to the home since the agent
// started (`weft join` and `weft init` call it). Vaults that opened are
// syncing even when another failed; the failure is the error.
func (h handlers) loadVaults(w http.ResponseWriter, r *http.Request) {
	added, err := h.b.AddNewVaults()
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, VaultsLoaded{Added: append([]string{}, added...)})
}

func (h handlers) doctor(w http.ResponseWriter, r *http.Request) {
	d, err := h.b.Diagnose(r.Context(), r.URL.Query().Get("path"))
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, d)
}

func (h handlers) history(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	if p == "" {
		http.Error(w, "history needs ?path=/abs/path", http.StatusBadRequest)
		return
	}
	hist, err := h.b.History(p)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, hist)
}

func (h handlers) restore(w http.ResponseWriter, r *http.Request) {
	var req RestoreRequest
	if !decode(w, r, 64<<10, "restore request", false, &req) {
		return
	}
	res, err := h.b.Restore(r.Context(), req)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, res)
}

func (h handlers) resolve(w http.ResponseWriter, r *http.Request) {
	var req ResolveRequest
	if !decode(w, r, 64<<10, "resolve request", false, &req) {
		return
	}
	res, err := h.b.Resolve(r.Context(), req)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, res)
}

func (h handlers) relaysChange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Vault  string `json:"vault"`
		Addr   string `json:"addr"`
		Remove bool   `json:"remove"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	vid, ok := vaultID(w, req.Vault)
	if !ok {
		return
	}
	if err := h.b.ChangeRelay(vid, req.Addr, req.Remove); err != nil {
		fail(w, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, h.b.Relays())
}

func (h handlers) revoke(w http.ResponseWriter, r *http.Request) {
	var req RevokeRequest
	if !decode(w, r, 4096, "revoke request", false, &req) {
		return
	}
	res, err := h.b.Revoke(req)
	if err != nil {
		fail(w, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, res)
}

func (h handlers) scrub(w http.ResponseWriter, r *http.Request) {
	var req ScrubRequest
	if !decode(w, r, 64<<10, "scrub request", true, &req) {
		return
	}
	res, err := h.b.Scrub(r.Context(), req)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, res)
}

func (h handlers) decideDeletions(w http.ResponseWriter, r *http.Request) {
	var req DeletionsRequest
	if !decode(w, r, 64<<10, "deletions request", false, &req) {
		return
	}
	res, err := h.b.DecideDeletions(r.Context(), req)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, res)
}

func (h handlers) folderReset(w http.ResponseWriter, r *http.Request) {
	var req FolderRequest
	if !decode(w, r, 64<<10, "folder request", false, &req) {
		return
	}
	if err := h.b.ResetFolder(req.Folder); err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]string{"folder": req.Folder, "result": "reset"})
}

func (h handlers) folderGuard(w http.ResponseWriter, r *http.Request) {
	var req FolderRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.MassDelete == nil {
		http.Error(w, "folder guard request: want {folder, mass_delete}", http.StatusBadRequest)
		return
	}
	p, err := h.b.SetMassDeletePolicy(req.Folder, *req.MassDelete)
	if err != nil {
		fail(w, err, http.StatusBadRequest) // unclassified: an invalid policy
		return
	}
	writeJSON(w, map[string]any{"folder": req.Folder, "mass_delete": p, "policy": p.String()})
}

func (h handlers) setVersionPolicy(w http.ResponseWriter, r *http.Request) {
	var req VersionsRequest
	if !decode(w, r, 64<<10, "versions request", false, &req) {
		return
	}
	info, err := h.b.SetVersionPolicy(r.Context(), req.Folder, req.Policy)
	if err != nil {
		fail(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, info)
}
