package node

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/members"
	"github.com/weftsync/weft/node/ui"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/home"
)

// The local API (node/api serves it) runs while Run does: its address
// and token are written to the home (api.json, 0600) for the CLI, and the
// monitor behind status, doctor and metrics (monitor.go) lives as long as
// it does.

// apiRun is the running API and its monitor.
type apiRun struct {
	srv *api.Server
	mon *monitor
}

// startAPI listens on addr (a loopback host:port; "" for a random port)
// and records where in the home. Calls run under ctx.
func (n *Node) startAPI(ctx context.Context, addr string) (*apiRun, error) {
	mon := newMonitor(n)
	logins := ui.NewLogins(nil)
	srv, err := api.Listen(ctx, api.Config{
		Addr: addr, Backend: apiBackend{n, n.members}, Metrics: mon.metrics.Handler(), Opened: n.opened, Log: n.log,
		UI: ui.Handler(apiBackend{n, n.members}, logins), UILogin: logins.NewCode,
	})
	if err != nil {
		return nil, err
	}
	if err := n.cfg.Home.WriteAPIInfo(home.APIInfo{Addr: srv.Addr(), Token: srv.Token(), PID: os.Getpid()}); err != nil {
		srv.Close()
		return nil, err
	}
	return &apiRun{srv: srv, mon: mon}, nil
}

// serve answers the API until ctx ends; it returns once the monitor and
// the server have ended, and the home no longer names the API.
func (a *apiRun) serve(ctx context.Context, n *Node) {
	var wg sync.WaitGroup
	wg.Go(func() { a.mon.run(ctx) })
	a.srv.Serve(ctx)
	wg.Wait()
	if err := n.cfg.Home.RemoveAPIInfo(); err != nil {
		n.log.Warn("removing API info", "err", err)
	}
}

// apiBackend is the node as the local API sees it (api.Backend): the
// calls only the API makes (deletions held, history, restore, resolve,
// scrub, versions, relays, diagnosis, vaults added) are its own methods,
// not the Node's, membership is node/members' Service, and the node's
// own queries (Status, Subscribe) come through the embedded Node.
// Programs and tests reach it without HTTP through Node.API.
type apiBackend struct {
	*Node
	*members.Service
}

var _ api.Backend = apiBackend{}

// API is the node as its local API serves it, for a program or a test
// that calls it without HTTP.
func (n *Node) API() api.Backend { return apiBackend{n, n.members} }

// Invite makes an invite code for the API.
func (b apiBackend) Invite(vault keys.VaultID, ttl time.Duration, confirm bool) (api.InviteResponse, error) {
	inv, err := b.Service.Invite(vault, ttl, confirm)
	if err != nil {
		return api.InviteResponse{}, err
	}
	return api.InviteResponse{Code: inv.String(), Expires: time.Unix(inv.Expires, 0).UTC()}, nil
}

// DecideJoin approves or denies a waiting join for the API.
func (b apiBackend) DecideJoin(req api.JoinDecision, approve bool) (api.WaitingJoin, error) {
	return b.Service.DecideJoin(req.Device, approve)
}

// Conflicts lists the conflict copies in every folder, by folder and path,
// with what each copy's name and the folder say of it (api.Conflict).
func (b apiBackend) Conflicts() []api.Conflict {
	out := []api.Conflict{}
	for _, v := range b.vaultsNow() {
		byShort := map[string]keys.DeviceID{}
		for _, d := range v.roster.Members() {
			byShort[d.Short()] = d
		}
		side := func(d keys.DeviceID, short string, mtime int64, size uint64) api.ConflictSide {
			s := api.ConflictSide{Short: short, MTime: time.Unix(0, mtime).UTC(), Size: int64(size)}
			if d != (keys.DeviceID{}) {
				s.Device, s.Name, s.Short = d.String(), v.roster.Name(d), d.Short()
			}
			return s
		}
		v.mu.Lock()
		for p, r := range v.index.All() {
			if r.Kind != entry.KindFile || !isConflictCopy(p) {
				continue
			}
			c := api.Conflict{Folder: v.cfg.Folder, Path: p, Copy: side(keys.DeviceID{}, "", r.MTime, r.Size)}
			if o, ok := protocol.ParseConflictName(p); ok {
				c.Of = o.Of
				c.Copy = side(byShort[o.Author], o.Author, o.MTime.UnixNano(), r.Size)
				if w, ok := v.index.Get(o.Of); ok && o.Of != "" && w.Kind == entry.KindFile {
					ws := side(w.Version.Author, "", w.MTime, w.Size)
					// Whose content it is: its origin, not the device that
					// resolved the conflict by keeping it.
					if org, ok := v.view.Graph.Origin(w.Version); ok && org.ID.Author != w.Version.Author {
						ws = side(org.ID.Author, "", org.MTime, w.Size)
						ws.RecordedBy, ws.RecordedByName = w.Version.Author.String(), v.roster.Name(w.Version.Author)
					}
					c.Winner = &ws
				}
			}
			out = append(out, c)
		}
		v.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b api.Conflict) int { return strings.Compare(a.Folder+"\x00"+a.Path, b.Folder+"\x00"+b.Path) })
	return out
}

// Devices lists every vault's members.
func (b apiBackend) Devices() []api.Device {
	out := []api.Device{}
	for _, v := range b.vaultsNow() {
		for _, d := range v.roster.Members() {
			role, _ := v.roster.Role(d)
			out = append(out, api.Device{Folder: v.cfg.Folder, ID: d.String(), Name: v.roster.Name(d), Role: role.String(), Self: d == b.id.ID()})
		}
	}
	return out
}

// Scan scans every folder, or the one path req names, and says so on the
// event stream.
func (b apiBackend) Scan(ctx context.Context, req api.ScanRequest) ([]api.ScanResult, error) {
	vaults, rel := b.vaultsNow(), ""
	if req.Path != "" {
		v, p, err := b.resolvePath(req.Path)
		if err != nil {
			return nil, err
		}
		vaults, rel = []*vault{v}, p
	}
	out := []api.ScanResult{}
	for _, v := range vaults {
		res, err := b.scanNoted(ctx, v, rel, req.Path != "")
		if err != nil {
			return nil, err
		}
		out = append(out, res)
		b.events.Publish(api.Event{Type: api.EventScanned, Folder: v.cfg.Folder, Path: res.Path, Count: res.Changes, Kind: "api"})
	}
	return out, nil
}

// EventCursor reads the node's events from after the one with ID after
// (api.Bus.Cursor).
func (b apiBackend) EventCursor(after uint64) *api.Cursor { return b.events.Cursor(after) }
