package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestCursorResumes: IDs go up by one; a cursor from now sees only what
// is published after it, a cursor after an ID resumes right after it, and
// Next waits for the next event.
func TestCursorResumes(t *testing.T) {
	b := NewBus()
	ctx := context.Background()
	b.Publish(Event{Type: EventScanned})
	now := b.Cursor(0)
	b.Publish(Event{Type: EventApplied, Path: "a"})
	b.Publish(Event{Type: EventApplied, Path: "b"})
	first, err := now.Next(ctx)
	if err != nil || first.Path != "a" {
		t.Fatalf("from now: %+v, %v", first, err)
	}
	second, _ := now.Next(ctx)
	if second.ID != first.ID+1 || second.Path != "b" {
		t.Errorf("IDs %d then %d", first.ID, second.ID)
	}
	resumed, _ := b.Cursor(first.ID).Next(ctx)
	if resumed.ID != second.ID {
		t.Errorf("resumed after %d at %d, want %d", first.ID, resumed.ID, second.ID)
	}

	got := make(chan Event, 1)
	go func() {
		ev, _ := now.Next(ctx)
		got <- ev
	}()
	b.Publish(Event{Type: EventConflict, Path: "c"})
	if ev := <-got; ev.Path != "c" {
		t.Errorf("waited for %+v", ev)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := now.Next(gone); err == nil {
		t.Error("Next returned without an event after its context ended")
	}
}

// TestCursorSaysWhatItMissed: a reader further behind than the bus keeps
// gets events-missed with the count, then the oldest kept; one resuming
// from another run's ID gets events-missed with no count.
func TestCursorSaysWhatItMissed(t *testing.T) {
	b := NewBus()
	ctx := context.Background()
	b.Publish(Event{Type: EventScanned})
	slow := b.Cursor(0)
	for i := range RetainEvents + 10 {
		b.Publish(Event{Type: EventApplied, Count: i})
	}
	ev, _ := slow.Next(ctx)
	if ev.Type != EventMissed || ev.Count != 10 {
		t.Fatalf("behind by 10: %+v, want events-missed with count 10", ev)
	}
	if ev, _ = slow.Next(ctx); ev.Type != EventApplied || ev.Count != 10 {
		t.Errorf("after the gap: %+v, want the oldest kept (count 10)", ev)
	}
	for _, after := range []uint64{1, b.next + 100} {
		c := b.Cursor(after)
		if ev, _ := c.Next(ctx); ev.Type != EventMissed || ev.Count != 0 {
			t.Errorf("after %d (another run): %+v, want events-missed, count unknown", after, ev)
		}
		if ev, _ := c.Next(ctx); ev.Type != EventApplied {
			t.Errorf("after %d: then %+v, want the oldest kept", after, ev)
		}
	}
}

// TestCursorRewindReadsTheLatest: a cursor rewound by n reads the n
// latest events without waiting, never before the oldest kept, and says
// nothing of what it skipped.
func TestCursorRewindReadsTheLatest(t *testing.T) {
	b := NewBus()
	c := b.Cursor(0)
	if _, ok := c.TryNext(); ok {
		t.Fatal("an empty bus gave an event")
	}
	for i := range 5 {
		b.Publish(Event{Type: EventApplied, Count: i})
	}
	c = b.Cursor(0)
	c.Rewind(3)
	var got []int
	for ev, ok := c.TryNext(); ok; ev, ok = c.TryNext() {
		got = append(got, ev.Count)
	}
	if !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("the 3 latest: %v", got)
	}
	for i := range RetainEvents {
		b.Publish(Event{Type: EventApplied, Count: 5 + i})
	}
	c = b.Cursor(0)
	c.Rewind(RetainEvents + 100)
	ev, ok := c.TryNext()
	if !ok || ev.Type != EventApplied || ev.Count != 5 {
		t.Fatalf("rewound past the oldest kept: %+v %v, want the oldest kept (count 5)", ev, ok)
	}
}

// eventsBackend serves a bus's events.
type eventsBackend struct {
	Backend
	bus *Bus
}

func (e eventsBackend) EventCursor(after uint64) *Cursor { return e.bus.Cursor(after) }

func (e eventsBackend) Status() Status {
	return Status{Folders: []FolderStatus{{Path: "/f"}, {Path: "/g"}}}
}

// TestEventStreamResumesAndFilters: GET /v1/events sends each event with
// its ID, resumes after ?since= or Last-Event-ID, and keeps only the
// types and folder asked for.
func TestEventStreamResumesAndFilters(t *testing.T) {
	b := NewBus()
	srv := httptest.NewServer(Routes(eventsBackend{bus: b}))
	defer srv.Close()
	b.Publish(Event{Type: EventScanned, Folder: "/f"})
	mark := b.next - 1
	b.Publish(Event{Type: EventApplied, Folder: "/g", Path: "x"})
	b.Publish(Event{Type: EventApplied, Folder: "/f", Path: "y"})
	b.Publish(Event{Type: EventConflict, Folder: "/f", Path: "z"})

	read := func(query string, header string, n int) []Event {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/events"+query, nil)
		if header != "" {
			req.Header.Set("Last-Event-ID", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []Event
		var id string
		sc := bufio.NewScanner(resp.Body)
		for len(out) < n && sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var ev Event
				if err := json.Unmarshal([]byte(v), &ev); err != nil {
					t.Fatal(err)
				}
				if id == "" || id != jsonID(ev.ID) {
					t.Errorf("event %+v sent with id %q", ev, id)
				}
				out = append(out, ev)
				id = ""
			}
		}
		return out
	}
	all := read("?since="+jsonID(mark), "", 3)
	if len(all) != 3 || all[0].Path != "x" || all[2].Path != "z" {
		t.Fatalf("since %d: %+v", mark, all)
	}
	if got := read("", jsonID(all[0].ID), 2); len(got) != 2 || got[0].Path != "y" {
		t.Errorf("Last-Event-ID: %+v", got)
	}
	if got := read("?since="+jsonID(mark)+"&type=file-applied&folder=/f/", "", 1); len(got) != 1 || got[0].Path != "y" {
		t.Errorf("filtered: %+v", got)
	}
	for _, q := range []string{"?since=soon", "?folder=/elsewhere"} {
		resp, err := http.Get(srv.URL + "/v1/events" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, resp.StatusCode)
		}
	}
}

func jsonID(id uint64) string { b, _ := json.Marshal(id); return string(b) }
