package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/weftsync/weft/node/api"
)

// events subscribes to the agent's event stream (GET /v1/events) and
// delivers the events of the given types until ctx ends. A reader that
// falls behind by more than the channel's buffer misses events.
func (d *device) events(ctx context.Context, types ...api.EventType) (<-chan api.Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.api.Addr+"/v1/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.api.Token)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return nil, err
	}
	out := make(chan api.Event, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev api.Event
			if json.Unmarshal([]byte(data), &ev) != nil || !slices.Contains(types, ev.Type) {
				continue
			}
			select {
			case out <- ev:
			default:
			}
		}
	}()
	return out, nil
}
