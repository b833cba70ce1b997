package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
)

// client talks to the running agent's local API.
type client struct {
	base  string
	token string
	http  *http.Client
}

// errNoAgent reports that no agent answered at the address in the home.
var errNoAgent = errors.New("reaching the agent (is `weft up` running?)")

// loadInAgent asks a running agent to start syncing the vaults added to
// the home since it started (`weft join`, `weft init`). It reports
// whether an agent answered; none is not an error: the next `weft up`
// syncs them.
func (g *globals) loadInAgent() (bool, error) {
	cl, err := g.client()
	if err != nil {
		return false, nil // no agent has run in this home, or it stopped cleanly
	}
	var res api.VaultsLoaded
	if err := cl.post("/v1/vaults/load", nil, &res); err != nil {
		var ae *agentError
		switch {
		case errors.Is(err, errNoAgent):
			return false, nil // its address file outlived it (a kill)
		case errors.As(err, &ae) && ae.status == http.StatusNotFound:
			return false, nil // an agent older than this binary: its restart syncs it
		}
		return true, err
	}
	return true, nil
}

// agentError is an answer of the agent other than 200 OK.
type agentError struct {
	status int
	msg    string
}

func (e *agentError) Error() string { return "agent: " + e.msg }

func (g *globals) client() (*client, error) {
	h, err := g.openHome()
	if err != nil {
		return nil, err
	}
	info, err := h.ReadAPIInfo()
	if err != nil {
		return nil, err
	}
	return &client{base: "http://" + info.Addr, token: info.Token, http: &http.Client{Timeout: 5 * time.Minute}}, nil
}

func (c *client) get(path string, out any) error { return c.do(http.MethodGet, path, nil, out) }

func (c *client) post(path string, in, out any) error { return c.do(http.MethodPost, path, in, out) }

func (c *client) do(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoAgent, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &agentError{status: resp.StatusCode, msg: strings.TrimSpace(string(msg))}
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
