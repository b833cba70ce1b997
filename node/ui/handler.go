package ui

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
)

//go:embed templates/*.html
var templateFS embed.FS

// cookieName holds the session.
const cookieName = "weft_ui"

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"size": doctor.HumanSize,
	"fix":  doctor.FixFor,
	"rate": func(r folderRate) string {
		s := fmt.Sprintf("%.0f files/s, %s/s", r.Items, doctor.HumanSize(int64(r.Bytes)))
		if r.Left > 0 {
			s += ", about " + r.Left.String() + " left"
		}
		return s
	},
	"bps": func(f float64) string { return doctor.HumanSize(int64(f)) + "/s" },
	// rfc3339 pins a moment previewed (an "-2h" resolved once) for the
	// form that carries the restore out.
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"usize":   func(n uint64) string { return doctor.HumanSize(int64(min(n, 1<<62))) },
	"abs":     func(folder, p string) string { return filepath.Join(folder, filepath.FromSlash(p)) },
	"side": func(s api.ConflictSide) string {
		if s.Name != "" {
			return s.Name + " (" + s.Short + ")"
		}
		return s.Short
	},
}).ParseFS(templateFS, "templates/*.html"))

// page is what every page renders from.
type page struct {
	Title     string
	Message   string
	Error     string
	Token     string // the session's form token
	Status    api.Status
	Conflicts []api.Conflict
	Relays    []api.RelayInfo
	Joins     []api.WaitingJoin
	Invite    *invitation // the pairing page's invite just made
	Path      string      // the history page's path
	History   *api.History
	Preview   *restorePreview
	Rates     map[string]folderRate // the folders page's rates, by folder
	// Compared holds the conflicts page's side-by-side comparisons, by
	// the conflict's index (nil: not compared).
	Compared []*comparison
	Activity []activity
	// Refresh, when not 0, reloads the page every so many seconds; All
	// and Paused are the activity page's choices.
	Refresh     int
	All, Paused bool
}

// activityRefresh is how often the activity page reloads itself, in
// seconds: live enough to watch a sync, with no script (docs/ui.md).
const activityRefresh = 3

// Handler serves the UI under /ui/ over b, with sessions from l.
func Handler(b api.Backend, l *Logins) http.Handler {
	h := handler{b: b, l: l}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/login", h.login)
	mux.HandleFunc("GET /ui/{$}", h.session(h.folders))
	mux.HandleFunc("GET /ui/conflicts", h.session(h.conflicts))
	mux.HandleFunc("GET /ui/devices", h.session(h.devices))
	mux.HandleFunc("GET /ui/activity", h.session(h.activity))
	mux.HandleFunc("GET /ui/relays", h.session(h.relays))
	mux.HandleFunc("POST /ui/resolve", h.session(h.sameOrigin(h.resolve)))
	mux.HandleFunc("POST /ui/merge", h.session(h.sameOrigin(h.merge)))
	mux.HandleFunc("GET /ui/pairing", h.session(h.pairing))
	mux.HandleFunc("GET /ui/history", h.session(h.history))
	mux.HandleFunc("POST /ui/restore", h.session(h.sameOrigin(h.restore)))
	mux.HandleFunc("POST /ui/invite", h.session(h.sameOrigin(h.invite)))
	mux.HandleFunc("POST /ui/joins", h.session(h.sameOrigin(h.decideJoin)))
	return headers(mux)
}

type handler struct {
	b api.Backend
	l *Logins
}

// headers sets what every UI answer carries: no caching, no framing by
// another site, no scripts from anywhere.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
		w.Header().Set("Referrer-Policy", "same-origin") // "no-referrer" would make browsers send Origin: null with the forms
		h.ServeHTTP(w, r)
	})
}

// login takes a one-time code, starts a session and sends the browser to
// the folders page, so the code's URL leads nowhere afterwards.
func (h handler) login(w http.ResponseWriter, r *http.Request) {
	s, ok := h.l.Login(r.URL.Query().Get("code"))
	if !ok {
		h.render(w, http.StatusUnauthorized, "login.html", page{Title: "log in", Error: "This login link was used already, or is older than two minutes, or is not this agent's."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s, Path: "/ui/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Expires: time.Now().Add(SessionTTL)})
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// session runs next only for a request of a live session.
func (h handler) session(next func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		if err != nil || !h.l.Valid(c.Value) {
			h.render(w, http.StatusUnauthorized, "login.html", page{Title: "log in"})
			return
		}
		next(w, r, c.Value)
	}
}

// sameOrigin runs next only for a form posted from the UI itself: the
// session's form token, and an Origin (else a Referer) of this host.
func (h handler) sameOrigin(next func(http.ResponseWriter, *http.Request, string)) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, s string) {
		from := r.Header.Get("Origin")
		if from == "" {
			if ref, err := url.Parse(r.Referer()); err == nil && ref.Host != "" {
				from = ref.Scheme + "://" + ref.Host
			}
		}
		if from != "http://"+r.Host || !h.l.CheckFormToken(s, r.PostFormValue("token")) {
			http.Error(w, "refused: not a form of this page", http.StatusForbidden)
			return
		}
		next(w, r, s)
	}
}

// folders shows every folder's state; while one is scanning or syncing,
// the page shows its rate and time left and reloads itself.
func (h handler) folders(w http.ResponseWriter, r *http.Request, s string) {
	p := page{Title: "folders", Message: r.URL.Query().Get("msg"), Status: h.b.Status(), Token: h.l.FormToken(s)}
	p.Rates = folderRates(h.b.EventCursor(0), h.l.now(), p.Status.Folders)
	for _, f := range p.Status.Folders {
		if f.State == "syncing" || f.State == "scanning" {
			p.Refresh = activityRefresh
		}
	}
	h.render(w, http.StatusOK, "folders.html", p)
}

// devices lists the peers with their throughput; the page reloads
// itself.
func (h handler) devices(w http.ResponseWriter, r *http.Request, s string) {
	h.render(w, http.StatusOK, "devices.html", page{Title: "devices", Status: h.b.Status(), Token: h.l.FormToken(s), Refresh: devicesRefresh})
}

// devicesRefresh is how often the devices page reloads itself, in
// seconds.
const devicesRefresh = 5

// activity lists the latest events, newest first (latestActivity).
func (h handler) activity(w http.ResponseWriter, r *http.Request, s string) {
	q := r.URL.Query()
	p := page{Title: "activity", All: q.Get("all") != "", Paused: q.Get("pause") != "", Token: h.l.FormToken(s)}
	names := map[string]string{}
	for _, peer := range h.b.Status().Peers {
		if peer.Name != "" {
			names[peer.ID] = peer.Name
		}
	}
	p.Activity = latestActivity(h.b.EventCursor(0), p.All, names)
	if !p.Paused {
		p.Refresh = activityRefresh
	}
	h.render(w, http.StatusOK, "activity.html", p)
}

func (h handler) relays(w http.ResponseWriter, r *http.Request, s string) {
	h.render(w, http.StatusOK, "relays.html", page{Title: "relays", Relays: h.b.Relays(), Token: h.l.FormToken(s)})
}

func (h handler) conflicts(w http.ResponseWriter, r *http.Request, s string) {
	q := r.URL.Query()
	cs := h.b.Conflicts()
	h.render(w, http.StatusOK, "conflicts.html", page{Title: "conflicts", Message: q.Get("msg"), Error: q.Get("err"),
		Conflicts: cs, Compared: compareAll(cs), Token: h.l.FormToken(s)})
}

// resolve carries out a choice about a conflict copy (api.ResolveRequest)
// and goes back to the conflicts, saying what happened.
func (h handler) resolve(w http.ResponseWriter, r *http.Request, _ string) {
	req := api.ResolveRequest{Path: r.PostFormValue("path"), Keep: r.PostFormValue("keep")}
	res, err := h.b.Resolve(r.Context(), req)
	q := url.Values{}
	switch {
	case err != nil:
		q.Set("err", err.Error())
	case res.Kept == "both":
		q.Set("msg", "Kept both: "+res.Copy+" is now "+res.Renamed+".")
	case res.Kept == "copy":
		q.Set("msg", "The copy's content is now "+res.Of+"; "+res.Copy+" is gone.")
	default:
		q.Set("msg", res.Of+" kept as it was; "+res.Copy+" is gone.")
	}
	http.Redirect(w, r, "/ui/conflicts?"+q.Encode(), http.StatusSeeOther)
}

// render writes page p with template name.
func (h handler) render(w http.ResponseWriter, code int, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if err := pages.ExecuteTemplate(w, name, p); err != nil && !errors.Is(err, http.ErrHandlerTimeout) {
		_, _ = w.Write([]byte("<p>rendering failed: " + template.HTMLEscapeString(err.Error()) + "</p>"))
	}
}
