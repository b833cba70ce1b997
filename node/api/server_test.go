package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAPIWaitsForOpen: while the vaults open, the API answers status, the
// event stream and metrics at once and holds every other call (here one
// whose client gives up: it is refused, not answered as if the folder did
// not exist); once the vaults are open every call goes through.
func TestAPIWaitsForOpen(t *testing.T) {
	opened := make(chan struct{})
	var reached []string
	h := waitOpen(opened, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = append(reached, r.URL.Path) }))
	call := func(path string, ctx context.Context) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil))
		return rec.Code
	}
	gaveUp, cancel := context.WithCancel(context.Background())
	cancel()
	for _, p := range []string{"/v1/status", "/v1/events", "/metrics"} {
		if code := call(p, gaveUp); code != http.StatusOK {
			t.Errorf("%s while opening: %d, want it answered", p, code)
		}
	}
	if code := call("/v1/doctor", gaveUp); code != http.StatusServiceUnavailable {
		t.Errorf("/v1/doctor while opening, client gone: %d, want 503", code)
	}
	if len(reached) != 3 {
		t.Fatalf("reached %v while opening, want only status, events and metrics", reached)
	}
	close(opened)
	if code := call("/v1/doctor", context.Background()); code != http.StatusOK || len(reached) != 4 {
		t.Fatalf("/v1/doctor once open: %d, reached %v", code, reached)
	}
}

// fakeBackend answers the calls a test sets; any other call panics
// (the embedded nil interface), so a test cannot pass by a call it did
// not expect.
type fakeBackend struct {
	Backend
	status  Status
	revoke  func(RevokeRequest) (RevokeResult, error)
	history func(string) (History, error)
}

func (f fakeBackend) Status() Status { return f.status }
func (f fakeBackend) Revoke(r RevokeRequest) (RevokeResult, error) {
	return f.revoke(r)
}
func (f fakeBackend) History(p string) (History, error) { return f.history(p) }

func TestListenOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "[::]:0", "localhost-ish:0", "nonsense"} {
		s, err := Listen(context.Background(), Config{Addr: addr, Backend: fakeBackend{}})
		if err == nil {
			s.Close()
			t.Errorf("Listen(%q): no error, want a refusal", addr)
		}
	}
}

// TestTokenRequired: every call needs the bearer token, status included.
func TestTokenRequired(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Listen(ctx, Config{Backend: fakeBackend{status: Status{Device: "self"}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	call := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/v1/status", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call(""); code != http.StatusUnauthorized {
		t.Errorf("no token: got %d, want 401", code)
	}
	if code, _ := call(s.Token() + "x"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: got %d, want 401", code)
	}
	code, body := call(s.Token())
	var st Status
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || st.Device != "self" {
		t.Errorf("with the token: got %d %q, want 200 and the backend's status", code, body)
	}
}

// TestErrorStatuses: an error's class decides its HTTP status, through
// any wrapping; an unclassified error gets the call's own default.
func TestErrorStatuses(t *testing.T) {
	errNoDevice := Classified(ErrNotFound, "no member of the vault matches")
	errNotAdmin := Classified(ErrForbidden, "only an admin can")
	errBusy := Classified(ErrConflict, "this path is still syncing")
	errGone := Classified(ErrUnavailable, "the content is not available")
	tests := []struct {
		name string
		err  error
		// revoke's default is 400, history's 500
		revoke, history int
	}{
		{"not found, wrapped", fmt.Errorf("device x: %w", errNoDevice), http.StatusNotFound, http.StatusNotFound},
		{"forbidden", errNotAdmin, http.StatusForbidden, http.StatusForbidden},
		{"conflict", fmt.Errorf("a.md: %w", errBusy), http.StatusConflict, http.StatusConflict},
		{"unavailable", errGone, http.StatusServiceUnavailable, http.StatusServiceUnavailable},
		{"unclassified", errors.New("disk on fire"), http.StatusBadRequest, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Routes(fakeBackend{
				revoke:  func(RevokeRequest) (RevokeResult, error) { return RevokeResult{}, tt.err },
				history: func(string) (History, error) { return History{}, tt.err },
			})
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/revoke", strings.NewReader(`{"device":"x"}`)))
			if w.Code != tt.revoke || !strings.Contains(w.Body.String(), tt.err.Error()) {
				t.Errorf("revoke: got %d %q, want %d and the error's message", w.Code, w.Body.String(), tt.revoke)
			}
			w = httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/history?path=/f/a.md", nil))
			if w.Code != tt.history {
				t.Errorf("history: got %d, want %d", w.Code, tt.history)
			}
		})
	}
}

// TestClassifiedIsASentinel: a classified error matches itself and its
// class, not another error of the same class, and keeps its message.
func TestClassifiedIsASentinel(t *testing.T) {
	a := Classified(ErrNotFound, "no such folder")
	b := Classified(ErrNotFound, "no such folder")
	w := fmt.Errorf("x: %w", a)
	if !errors.Is(w, a) || !errors.Is(w, ErrNotFound) || errors.Is(w, b) || errors.Is(w, ErrConflict) {
		t.Errorf("errors.Is: got a %v, class %v, b %v, other class %v; want true, true, false, false",
			errors.Is(w, a), errors.Is(w, ErrNotFound), errors.Is(w, b), errors.Is(w, ErrConflict))
	}
	if got := a.Error(); got != "no such folder" {
		t.Errorf("message: got %q, want %q", got, "no such folder")
	}
}

// TestBadBodies: a body that is not the request's JSON is a 400 naming
// the request, and the backend is not asked (fakeBackend would panic).
func TestBadBodies(t *testing.T) {
	h := Routes(fakeBackend{})
	for _, path := range []string{"/v1/revoke", "/v1/restore", "/v1/deletions", "/v1/folders/reset", "/v1/folders/versions", "/v1/folders/guard", "/v1/scan", "/v1/scrub", "/v1/relays"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{not json`)))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: got %d %q, want 400", path, w.Code, w.Body.String())
		}
	}
}
