package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

// The local HTTP API: on 127.0.0.1, a random port by default, guarded by a
// random bearer token. docs/api.md documents every endpoint and the status
// contract. The server decodes requests, asks the Backend and encodes its
// answers; every decision is the Backend's.

// Backend is the agent as the API sees it. Its methods are called from the
// server's goroutines, several at a time: they must be safe for concurrent
// use. Errors carry their HTTP status by class (errors.go).
type Backend interface {
	Status() Status
	// EventCursor reads the agent's events from after the one with ID
	// after (0: from now), Bus.Cursor.
	EventCursor(after uint64) *Cursor
	// Invite makes a one-time invite code for vault (the zero ID: the only
	// vault) valid for ttl (0: the default).
	// With confirm, each join by the code waits for approval.
	Invite(vault keys.VaultID, ttl time.Duration, confirm bool) (InviteResponse, error)
	// WaitingJoins lists the joins waiting for approval, oldest first.
	WaitingJoins() []WaitingJoin
	// SetRole makes a member an admin, or an admin a member.
	SetRole(req RoleRequest) (Device, error)
	// Rename records a device's new name in its vault's membership.
	Rename(req RenameRequest) (Device, error)
	// Settings lists each vault's settings; ChangeSettings changes one's.
	Settings() []VaultSettings
	ChangeSettings(req SettingsRequest) (VaultSettings, error)
	// DecideJoin approves or denies the waiting join of the device req
	// names.
	DecideJoin(req JoinDecision, approve bool) (WaitingJoin, error)
	Conflicts() []Conflict
	// Resolve carries out a decision about a conflict copy.
	Resolve(ctx context.Context, req ResolveRequest) (ResolveResult, error)
	Devices() []Device
	Scan(ctx context.Context, req ScanRequest) ([]ScanResult, error)
	// AddNewVaults starts syncing the vaults added to the home since the
	// agent started and returns their folders.
	AddNewVaults() ([]string, error)
	// Diagnose answers for every folder, or for one absolute path.
	Diagnose(ctx context.Context, path string) (Diagnosis, error)
	History(path string) (History, error)
	Restore(ctx context.Context, req RestoreRequest) (RestoreResult, error)
	Relays() []RelayInfo
	ChangeRelay(vault keys.VaultID, addr string, remove bool) error
	Revoke(req RevokeRequest) (RevokeResult, error)
	Scrub(ctx context.Context, req ScrubRequest) ([]ScrubResult, error)
	Deletions() []HeldDeletions
	DecideDeletions(ctx context.Context, req DeletionsRequest) (DeletionsResult, error)
	ResetFolder(folder string) error
	// SetMassDeletePolicy changes a folder's guard and returns the policy
	// now in effect.
	SetMassDeletePolicy(folder string, p protocol.MassDeletePolicy) (protocol.MassDeletePolicy, error)
	Versions() []VersionsInfo
	SetVersionPolicy(ctx context.Context, folder string, p VersionPolicy) (VersionsInfo, error)
}

// Config says where the API listens and what it serves.
type Config struct {
	// Addr is a loopback host:port; empty means 127.0.0.1 on a random
	// port. Any other address is refused.
	Addr    string
	Backend Backend
	// Metrics answers GET /metrics; nil serves none.
	Metrics http.Handler
	// Opened is closed once the agent's vaults are open; until then every
	// call but status, the event stream and metrics waits for it. Nil
	// means open already.
	Opened <-chan struct{}
	Log    *slog.Logger
	// UI, if set, answers everything under /ui/ (node/ui: it keeps its own
	// sessions; no bearer token there), and UILogin makes the one-time
	// code of POST /v1/ui/login (`weft ui`), which needs the token.
	UI      http.Handler
	UILogin func() string
}

// Server is the local API, listening. Serve answers it.
type Server struct {
	ln    net.Listener
	token string
	srv   *http.Server
	log   *slog.Logger
}

// Listen checks cfg, listens on its loopback address and makes a new
// token. Requests run under ctx (their context ends when it does).
func Listen(ctx context.Context, cfg Config) (*Server, error) {
	addr := cfg.Addr
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
	var tok [24]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("making the API token: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("starting the local API: %w", err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{ln: ln, token: hex.EncodeToString(tok[:]), log: log}
	v1 := routes(cfg.Backend, cfg.Metrics)
	if cfg.UILogin != nil {
		v1.HandleFunc("POST /v1/ui/login", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, UILogin{URL: "http://" + r.Host + "/ui/login?code=" + cfg.UILogin()})
		})
	}
	var h http.Handler = authorized(s.token, waitOpen(cfg.Opened, v1))
	if cfg.UI != nil {
		top := http.NewServeMux()
		top.Handle("/ui/", cfg.UI)
		top.Handle("/", h)
		h = top
	}
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	return s, nil
}

// UILogin is the answer of POST /v1/ui/login: a one-time URL that logs a
// browser in to the UI (node/ui).
type UILogin struct {
	URL string `json:"url"`
}

// Addr is the address the API listens on (host:port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Token is the bearer token every call must carry.
func (s *Server) Token() string { return s.token }

// Close stops listening, for a Server that will not Serve (its caller
// failed to start the rest); Serve closes the listener itself.
func (s *Server) Close() error { return s.ln.Close() }

// Serve answers the API until ctx ends, then shuts down (waiting up to 2 s
// for calls under way) and returns.
func (s *Server) Serve(ctx context.Context) {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
	}()
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("local API stopped", "err", err)
	}
	<-stopped
}

// answersWhileOpening are the calls that do not need the vaults open:
// status shows the folders still opening, the event stream and metrics
// carry on as they come.
var answersWhileOpening = map[string]bool{"/v1/status": true, "/v1/events": true, "/metrics": true}

// waitOpen holds every other call until opened is closed (the agent's
// vaults are open), so that none answers as if a folder still opening were
// not synced at all, and `weft join` cannot open a vault the agent is
// opening.
func waitOpen(opened <-chan struct{}, h http.Handler) http.Handler {
	if opened == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !answersWhileOpening[r.URL.Path] {
			select {
			case <-opened:
			case <-r.Context().Done():
				http.Error(w, "the agent stopped while opening its folders", http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// authorized refuses every call that does not carry token.
func authorized(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			http.Error(w, "missing or wrong API token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Routes are the API's endpoints over b, without the token check or the
// wait for the vaults: what a test calls directly.
func Routes(b Backend) http.Handler { return routes(b, nil) }

func routes(b Backend, metrics http.Handler) *http.ServeMux {
	h := handlers{b}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Status()) })
	mux.HandleFunc("POST /v1/invite", h.invite)
	mux.HandleFunc("POST /v1/admins", func(w http.ResponseWriter, r *http.Request) {
		var req RoleRequest
		if !decode(w, r, 4096, "role request", false, &req) {
			return
		}
		d, err := b.SetRole(req)
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		writeJSON(w, d)
	})
	mux.HandleFunc("POST /v1/devices/rename", func(w http.ResponseWriter, r *http.Request) {
		var req RenameRequest
		if !decode(w, r, 4096, "rename request", false, &req) {
			return
		}
		d, err := b.Rename(req)
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		writeJSON(w, d)
	})
	mux.HandleFunc("GET /v1/settings", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Settings()) })
	mux.HandleFunc("POST /v1/settings", func(w http.ResponseWriter, r *http.Request) {
		var req SettingsRequest
		if !decode(w, r, 4096, "settings request", false, &req) {
			return
		}
		s, err := b.ChangeSettings(req)
		if err != nil {
			fail(w, err, http.StatusBadRequest)
			return
		}
		writeJSON(w, s)
	})
	mux.HandleFunc("GET /v1/joins", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.WaitingJoins()) })
	mux.HandleFunc("POST /v1/joins/approve", func(w http.ResponseWriter, r *http.Request) { h.decideJoin(w, r, true) })
	mux.HandleFunc("POST /v1/joins/deny", func(w http.ResponseWriter, r *http.Request) { h.decideJoin(w, r, false) })
	mux.HandleFunc("GET /v1/conflicts", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Conflicts()) })
	mux.HandleFunc("GET /v1/devices", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Devices()) })
	mux.HandleFunc("GET /v1/events", h.eventStream)
	mux.HandleFunc("POST /v1/scan", h.scan)
	mux.HandleFunc("POST /v1/vaults/load", h.loadVaults)
	mux.HandleFunc("GET /v1/doctor", h.doctor)
	mux.HandleFunc("GET /v1/history", h.history)
	mux.HandleFunc("POST /v1/restore", h.restore)
	mux.HandleFunc("POST /v1/resolve", h.resolve)
	mux.HandleFunc("GET /v1/relays", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Relays()) })
	mux.HandleFunc("POST /v1/relays", h.relaysChange)
	mux.HandleFunc("POST /v1/revoke", h.revoke)
	mux.HandleFunc("POST /v1/scrub", h.scrub)
	mux.HandleFunc("GET /v1/deletions", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Deletions()) })
	mux.HandleFunc("POST /v1/deletions", h.decideDeletions)
	mux.HandleFunc("POST /v1/folders/reset", h.folderReset)
	mux.HandleFunc("POST /v1/folders/guard", h.folderGuard)
	mux.HandleFunc("GET /v1/versions", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, b.Versions()) })
	mux.HandleFunc("POST /v1/folders/versions", h.setVersionPolicy)
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// fail answers err with its class's status, or otherwise.
func fail(w http.ResponseWriter, err error, otherwise int) {
	http.Error(w, err.Error(), statusOf(err, otherwise))
}

// decode reads a JSON body of at most limit bytes into v; what names the
// request in the error. An empty body is an error unless emptyOK.
func decode(w http.ResponseWriter, r *http.Request, limit int64, what string, emptyOK bool, v any) bool {
	if emptyOK && r.ContentLength == 0 {
		return true
	}
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit)).Decode(v)
	if err == nil || emptyOK && errors.Is(err, io.EOF) {
		return true
	}
	http.Error(w, what+": "+err.Error(), http.StatusBadRequest)
	return false
}
