package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/weftsync/weft/node/api"
)

// restoreForm is what a restore asks for, carried from the preview to the
// button that carries it out.
type restoreForm struct {
	Path    string // absolute: a file, or with All a folder or subtree
	Version string // a HistoryVersion.ID, for one path
	At      string // RFC 3339 or "-2h", with All
	All     bool
	Partial bool
}

// restorePreview is the restore page: what a restore would change (its
// dry run) and the form that carries it out.
type restorePreview struct {
	Form   restoreForm
	Result api.RestoreResult
}

// history shows a path's versions, each with a button to preview its
// restore; without a path, the form to ask for one and the folders'
// point-in-time restore.
func (h handler) history(w http.ResponseWriter, r *http.Request, s string) {
	q := r.URL.Query()
	p := page{Title: "history", Message: q.Get("msg"), Error: q.Get("err"), Status: h.b.Status(), Token: h.l.FormToken(s), Path: q.Get("path")}
	if p.Path != "" {
		hist, err := h.b.History(p.Path)
		if err != nil {
			p.Error = err.Error()
		} else {
			p.History = &hist
		}
	}
	h.render(w, http.StatusOK, "history.html", p)
}

// restore previews a restore (its dry run, rendered in the answer) or,
// once the preview's button is pressed, carries it out and goes back to
// the history, saying what happened.
func (h handler) restore(w http.ResponseWriter, r *http.Request, s string) {
	f := restoreForm{Path: r.PostFormValue("path"), Version: r.PostFormValue("version"), At: strings.TrimSpace(r.PostFormValue("at")),
		All: r.PostFormValue("all") != "", Partial: r.PostFormValue("partial") != ""}
	req := api.RestoreRequest{Path: f.Path, Version: f.Version, At: f.At, All: f.All, Partial: f.Partial, DryRun: r.PostFormValue("preview") != ""}
	res, err := h.b.Restore(r.Context(), req)
	back := url.Values{}
	if !f.All {
		back.Set("path", f.Path)
	}
	if req.DryRun {
		if err != nil {
			back.Set("err", "Cannot restore: "+err.Error())
			http.Redirect(w, r, "/ui/history?"+back.Encode(), http.StatusSeeOther)
			return
		}
		h.render(w, http.StatusOK, "restore.html", page{Title: "restore preview", Token: h.l.FormToken(s), Preview: &restorePreview{Form: f, Result: res}})
		return
	}
	if err != nil {
		back.Set("err", "Nothing restored: "+err.Error())
	} else {
		back.Set("msg", restoredSummary(res))
	}
	http.Redirect(w, r, "/ui/history?"+back.Encode(), http.StatusSeeOther)
}

// restoredSummary says what a restore did, in one sentence.
func restoredSummary(res api.RestoreResult) string {
	if len(res.Changes) == 0 && len(res.Failed) == 0 {
		return "Nothing to restore: everything already matches."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Restored %s", plural(len(res.Changes), "path", "paths"))
	if len(res.Changes) == 1 {
		fmt.Fprintf(&b, " (%s)", filepath.ToSlash(res.Changes[0].Path))
	}
	if len(res.Failed) > 0 {
		fmt.Fprintf(&b, "; %s could not be", plural(len(res.Failed), "path", "paths"))
	}
	b.WriteString(". Every device receives it as a new version; the history keeps what it replaced.")
	return b.String()
}
