// Package ui is the agent's web UI: server-rendered pages over the local
// API's Backend, served by `weft up` under /ui/ on the API's loopback
// address (docs/ui.md).
//
// Login: `weft ui` asks the agent (with the API's bearer token) for a
// one-time code and opens /ui/login?code=...; the code, good once and for
// two minutes, starts a session held in a cookie (HttpOnly, SameSite=Strict,
// path /ui/). The bearer token itself never sits in a URL. Every form
// carries a token derived from the session, and a POST must come from the
// UI's own origin (its Origin, else its Referer): a page elsewhere cannot
// make the browser act. The pages are html/template, embedded in the
// binary; no script is needed to use them.
package ui
