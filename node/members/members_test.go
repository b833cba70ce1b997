package members

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/enrol"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// memLog keeps a roster's records in memory.
type memLog struct{ recs []member.Record }

func (l *memLog) AppendMember(r member.Record) error { l.recs = append(l.recs, r); return nil }

// fakeVault is a vault whose roster is real and whose log heads are set
// by the test.
type fakeVault struct {
	id      keys.VaultID
	folder  string
	roster  *roster.Roster
	secrets keys.VaultSecrets
	heads   map[keys.DeviceID]uint64

	mu      sync.Mutex
	applied []member.Record
}

func (v *fakeVault) ID() keys.VaultID               { return v.id }
func (v *fakeVault) Folder() string                 { return v.folder }
func (v *fakeVault) Roster() *roster.Roster         { return v.roster }
func (v *fakeVault) Secrets() []byte                { return v.secrets.Bytes() }
func (v *fakeVault) LogHead(d keys.DeviceID) uint64 { return v.heads[d] }
func (v *fakeVault) Applied(r member.Record) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.applied = append(v.applied, r)
}
func (v *fakeVault) Ingest(raw []byte) error {
	r, err := v.roster.Ingest(raw)
	if err == nil && r != nil {
		v.Applied(*r)
	}
	return err
}

// fakeAgent is a device holding the test's vaults.
type fakeAgent struct {
	self   *keys.Identity
	vaults []*fakeVault

	mu     sync.Mutex
	events []api.Event
}

func (a *fakeAgent) Self() keys.DeviceID { return a.self.ID() }
func (a *fakeAgent) Now() time.Time      { return t0 }
func (a *fakeAgent) Addrs() []string     { return []string{"/ip4/127.0.0.1/tcp/4001"} }
func (a *fakeAgent) Vault(id keys.VaultID) Vault {
	for _, v := range a.vaults {
		if v.id == id {
			return v
		}
	}
	return nil
}
func (a *fakeAgent) Vaults() []Vault {
	var out []Vault
	for _, v := range a.vaults {
		out = append(out, v)
	}
	return out
}
func (a *fakeAgent) Publish(e api.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
}
func (a *fakeAgent) Counter(keys.DeviceID) wire.Counter { return nil }

func (a *fakeAgent) published(typ api.EventType) []api.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []api.Event
	for _, e := range a.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func newIdentity(t *testing.T) *keys.Identity {
	t.Helper()
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// newVault is a vault created by admin, syncing folder.
func newVault(t *testing.T, admin *keys.Identity, folder string) (*fakeVault, keys.RootSecret) {
	t.Helper()
	root, err := keys.GenerateRootSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	g := member.Genesis(admin, root.VaultKey(), t0.UnixMilli())
	st := member.NewState(root.Vault().ID)
	if err := st.Apply(g); err != nil {
		t.Fatal(err)
	}
	return &fakeVault{
		id: root.Vault().ID, folder: folder, secrets: root.Secrets(), heads: map[keys.DeviceID]uint64{},
		roster: roster.New(admin, root.Secrets(), st, &memLog{recs: []member.Record{g}}, func() time.Time { return t0 }),
	}, root
}

// newService is an agent for admin holding one vault, and its service.
func newService(t *testing.T) (*Service, *fakeAgent, *fakeVault) {
	t.Helper()
	admin := newIdentity(t)
	v, _ := newVault(t, admin, "/home/a/notes")
	a := &fakeAgent{self: admin, vaults: []*fakeVault{v}}
	return New(a, slog.New(slog.DiscardHandler)), a, v
}

// pairResult is what each side of a pairing session ended with.
type pairResult struct {
	joined Joined
	err    error // AnswerPair's
	asked  enrol.Joined
	askErr error // the joiner's (enrol.AskJoin)
}

// pair runs one pairing session over an in-memory pipe: the service
// answers, joiner asks with inv under name; onPending runs on the
// joiner's side when the join waits (it may act on the service).
func pair(t *testing.T, s *Service, joiner *keys.Identity, inv member.Invite, name string, onPending func(words string)) pairResult {
	t.Helper()
	inviterEnd, joinerEnd := net.Pipe()
	var r pairResult
	var wg sync.WaitGroup
	wg.Go(func() {
		defer inviterEnd.Close()
		r.joined, r.err = s.AnswerPair(context.Background(), inviterEnd, wire.NewConn(inviterEnd, nil), joiner.ID())
	})
	wg.Go(func() {
		defer joinerEnd.Close()
		r.asked, r.askErr = enrol.AskJoin(context.Background(), joinerEnd, func() { _ = joinerEnd.Close() }, joiner, inv, name, onPending)
	})
	wg.Wait()
	return r
}

// answerOnPipe answers one pairing session of joiner on an in-memory
// pipe and returns the joiner's end and AnswerPair's error once it ends.
func answerOnPipe(s *Service, joiner keys.DeviceID) (net.Conn, <-chan error) {
	inviterEnd, joinerEnd := net.Pipe()
	done := make(chan error, 1)
	go func() {
		defer inviterEnd.Close()
		_, err := s.AnswerPair(context.Background(), inviterEnd, wire.NewConn(inviterEnd, nil), joiner)
		done <- err
	}()
	return joinerEnd, done
}

// TestJoinAdmits: a one-step code admits the device that proves it, once:
// the joiner gets the vault's secrets and records that make it a member,
// the inviter's roster holds it under its name, what follows a record is
// done, and the join is announced; the same code again is refused as a
// bad invite, told to the joiner.
func TestJoinAdmits(t *testing.T) {
	s, a, v := newService(t)
	inv, err := s.Invite(keys.VaultID{}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(DefaultInviteTTL).Unix(); inv.Expires != want {
		t.Errorf("invite expires at %d, want %d", inv.Expires, want)
	}
	joiner := newIdentity(t)
	r := pair(t, s, joiner, inv, "laptop", nil)
	if r.err != nil || r.askErr != nil {
		t.Fatalf("pairing: answer %v, ask %v", r.err, r.askErr)
	}
	if r.joined.Device != joiner.ID() || r.joined.Name != "laptop" || r.joined.Vault != Vault(v) || r.joined.Words != inv.Words(joiner.ID()) {
		t.Errorf("joined %+v", r.joined)
	}
	if r.asked.Secrets.Vault().ID != v.id {
		t.Errorf("the joiner got the secrets of vault %s, want %s", r.asked.Secrets.Vault().ID, v.id)
	}
	if !v.roster.IsMember(joiner.ID()) || v.roster.Name(joiner.ID()) != "laptop" {
		t.Errorf("inviter's roster: member %v, name %q", v.roster.IsMember(joiner.ID()), v.roster.Name(joiner.ID()))
	}
	if len(v.applied) != 1 || v.applied[0].Op != member.OpAdd {
		t.Errorf("records applied: %+v", v.applied)
	}
	if ev := a.published(api.EventPeerJoined); len(ev) != 1 || ev[0].Name != "laptop" || ev[0].Folder != v.folder {
		t.Errorf("peer-joined events: %+v", ev)
	}

	again := pair(t, s, newIdentity(t), inv, "", nil)
	var ref *Refusal
	if !errors.As(again.err, &ref) || ref.Reason != refusal.BadInvite {
		t.Errorf("second use of the code: %v, want a bad-invite refusal", again.err)
	}
	if again.askErr == nil {
		t.Error("the second joiner was not told its code was refused")
	}
}

// TestJoinWaitsForApproval: a code made with confirmation holds the join
// until a person decides; both sides show the same words; approved, the
// device joins; denied, it is told so and is no member.
func TestJoinWaitsForApproval(t *testing.T) {
	for _, approve := range []bool{true, false} {
		s, a, v := newService(t)
		inv, err := s.Invite(v.id, time.Minute, true)
		if err != nil {
			t.Fatal(err)
		}
		joiner := newIdentity(t)
		var shown string
		r := pair(t, s, joiner, inv, "phone", func(words string) {
			shown = words
			w := s.WaitingJoins()
			if len(w) != 1 || w[0].Words != words || w[0].Folder != v.folder || w[0].Name != "phone" {
				t.Errorf("waiting joins %+v, joiner shows %q", w, words)
			}
			if _, err := s.DecideJoin(joiner.ID().String()[:20], approve); err != nil {
				t.Errorf("deciding: %v", err)
			}
		})
		if shown == "" {
			t.Fatal("the joiner was never told its join waits")
		}
		if ev := a.published(api.EventJoinPending); len(ev) != 1 || ev[0].Words != shown {
			t.Errorf("join-pending events %+v, words %q", ev, shown)
		}
		if approve {
			if r.err != nil || r.askErr != nil || r.joined.Words != shown || !v.roster.IsMember(joiner.ID()) {
				t.Errorf("approved: answer %v, ask %v, joined %+v", r.err, r.askErr, r.joined)
			}
			continue
		}
		var ref *Refusal
		if r.err == nil || errors.As(r.err, &ref) {
			t.Errorf("denied: AnswerPair returned %v, want a plain error (no refusal to count)", r.err)
		}
		if r.askErr == nil || v.roster.IsMember(joiner.ID()) {
			t.Errorf("denied: the joiner got %v, member %v", r.askErr, v.roster.IsMember(joiner.ID()))
		}
		if len(s.WaitingJoins()) != 0 {
			t.Errorf("a decided join still waits: %+v", s.WaitingJoins())
		}
	}
}

// TestJoinWithdrawn: a joiner that gives up while its join waits withdraws
// it; the session ends and nothing waits any more.
func TestJoinWithdrawn(t *testing.T) {
	s, _, v := newService(t)
	inv, err := s.Invite(v.id, time.Minute, true)
	if err != nil {
		t.Fatal(err)
	}
	joiner := newIdentity(t)
	joinerEnd, done := answerOnPipe(s, joiner.ID())
	f := wire.NewConn(joinerEnd, nil)
	if err := f.Send(wire.MsgPairRequest, wire.PairRequest{Proof: inv.Proof(joiner.ID())}); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if typ, _, err := f.Read(); err != nil || typ != wire.MsgPairPending {
		t.Fatalf("got %v %v, want PairPending", typ, err)
	}
	if len(s.WaitingJoins()) != 1 {
		t.Fatalf("waiting joins: %+v", s.WaitingJoins())
	}
	joinerEnd.Close()
	if err := <-done; err == nil {
		t.Error("a withdrawn join was answered as admitted")
	}
	if len(s.WaitingJoins()) != 0 || v.roster.IsMember(joiner.ID()) {
		t.Errorf("after withdrawing: waiting %+v, member %v", s.WaitingJoins(), v.roster.IsMember(joiner.ID()))
	}
}

// TestPairRefusals: what no joiner sends is refused before anything is
// taken: a first frame that is not a pairing request (a read refusal the
// agent classifies), a name that is not one (malformed), and a proof of no
// code here (a bad invite).
func TestPairRefusals(t *testing.T) {
	s, _, v := newService(t)
	inv, err := s.Invite(v.id, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	joiner := newIdentity(t)
	other, err := member.NewInvite(rand.Reader, joiner.ID(), nil, t0.Add(time.Hour).Unix())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		send   func(f *wire.Conn) error
		read   bool
		reason string
	}{
		{"hello instead", func(f *wire.Conn) error {
			return f.Send(wire.MsgHello, wire.Hello{Version: wire.ProtocolVersion, Vault: v.id})
		}, true, ""},
		{"bad name", func(f *wire.Conn) error {
			return f.Send(wire.MsgPairRequest, wire.PairRequest{Proof: inv.Proof(joiner.ID()), Name: "a\x00b"})
		}, false, refusal.Malformed},
		{"other code", func(f *wire.Conn) error {
			return f.Send(wire.MsgPairRequest, wire.PairRequest{Proof: other.Proof(joiner.ID())})
		}, false, refusal.BadInvite},
	} {
		joinerEnd, done := answerOnPipe(s, joiner.ID())
		f := wire.NewConn(joinerEnd, nil)
		if err := c.send(f); err == nil {
			_ = f.Flush()
		}
		go func() { _, _ = io.Copy(io.Discard, joinerEnd) }() // the answer, if any
		err := <-done
		joinerEnd.Close()
		var ref *Refusal
		if !errors.As(err, &ref) || ref.Read != c.read || ref.Reason != c.reason {
			t.Errorf("%s: got %v, want a refusal (read %v, reason %q)", c.name, err, c.read, c.reason)
		}
	}
	if v.roster.IsMember(joiner.ID()) {
		t.Error("a refused device became a member")
	}
	// The real code still works: refusals took nothing.
	if r := pair(t, s, joiner, inv, "", nil); r.err != nil || r.askErr != nil {
		t.Errorf("the code after refusals: %v, %v", r.err, r.askErr)
	}
}
