package netsync

import (
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// memTarget is a RecoverTarget over a member.State.
type memTarget struct {
	mu sync.Mutex
	s  *member.State
}

func (m *memTarget) Records() []member.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]member.Record(nil), m.s.Records()...)
}

func (m *memTarget) Append(rec member.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec.Seq != m.s.Seq+1 {
		return ErrMembershipMoved
	}
	return m.s.Apply(rec)
}

func seededRand(b byte) *rand.ChaCha8 { return rand.NewChaCha8([32]byte{b}) }

func newID(t *testing.T, b byte) *keys.Identity {
	t.Helper()
	id, err := keys.GenerateIdentity(seededRand(b))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// recoverPair runs one recovery over an in-memory stream: the answerer
// serves t, the opener recovers with root.
func recoverPair(t *testing.T, target RecoverTarget, answerer, opener *keys.Identity, root keys.RootSecret) ([]member.Record, error, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	served := make(chan error, 1)
	go func() {
		err := ServeRecover(wire.NewConn(a, nil), answerer.ID(), opener.ID(), target)
		a.Close()
		served <- err
	}()
	recs, err := RequestRecover(wire.NewConn(b, nil), seededRand(9), opener, answerer.ID(), root, "spare laptop", 1234)
	b.Close()
	return recs, err, <-served
}

// TestRecordLimitsAgree: a membership record member allows travels in
// every message that carries one.
func TestRecordLimitsAgree(t *testing.T) {
	if wire.MaxMemberRecord != member.MaxRecordSize {
		t.Fatalf("wire.MaxMemberRecord %d, member.MaxRecordSize %d", wire.MaxMemberRecord, member.MaxRecordSize)
	}
}

func TestRecover(t *testing.T) {
	root := keys.RootSecret{5}
	admin, relayID, fresh := newID(t, 1), newID(t, 2), newID(t, 3)
	s := member.NewState(root.Vault().ID)
	if err := s.Apply(member.GenesisWith(admin, root.VaultKey(), "", member.FlagRecoverable, 1)); err != nil {
		t.Fatal(err)
	}
	target := &memTarget{s: s}
	recs, err, serr := recoverPair(t, target, relayID, fresh, root)
	if err != nil || serr != nil {
		t.Fatalf("recover: %v; served: %v", err, serr)
	}
	if len(recs) != 2 || recs[1].Op != member.OpRecover || recs[1].Name != "spare laptop" {
		t.Fatalf("got %d records", len(recs))
	}
	if role, _ := target.s.Role(fresh.ID()); role != member.RoleAdmin {
		t.Fatalf("the answerer does not hold the recovered device as admin")
	}
	// A retry (the answer was lost): the device is admitted already, gets
	// the log, and nothing more is recorded.
	again, err, serr := recoverPair(t, target, relayID, fresh, root)
	if err != nil || serr != nil || len(again) != 2 || len(target.Records()) != 2 {
		t.Fatalf("retry: %d records, %v; served: %v; answerer holds %d", len(again), err, serr, len(target.Records()))
	}

	t.Run("wrong phrase", func(t *testing.T) {
		before := len(target.Records())
		_, err, serr := recoverPair(t, target, relayID, newID(t, 4), keys.RootSecret{6})
		if err == nil || !errors.Is(serr, member.ErrVaultSignature) {
			t.Fatalf("opener: %v; answerer: %v (want a refused proof)", err, serr)
		}
		if len(target.Records()) != before {
			t.Fatal("a refused recovery changed the membership")
		}
	})
	t.Run("vault not served", func(t *testing.T) {
		_, err, serr := recoverPair(t, nil, relayID, newID(t, 7), root)
		if err == nil || !strings.Contains(err.Error(), wire.ReasonNotMember) || serr == nil {
			t.Fatalf("opener: %v; answerer: %v", err, serr)
		}
	})
	t.Run("not recoverable", func(t *testing.T) {
		old := member.NewState(root.Vault().ID)
		if err := old.Apply(member.Genesis(admin, root.VaultKey(), 1)); err != nil {
			t.Fatal(err)
		}
		_, err, serr := recoverPair(t, &memTarget{s: old}, relayID, newID(t, 5), root)
		if err == nil || !strings.Contains(err.Error(), "cannot admit") || !errors.Is(serr, member.ErrNotRecoverable) {
			t.Fatalf("opener: %v; answerer: %v", err, serr)
		}
	})
	t.Run("moved", func(t *testing.T) {
		// The log grows between the answer and the record: refused, and
		// the answerer's log keeps the record that came first.
		grow := &growingTarget{memTarget: memTarget{s: cloneState(t, target.s)}, admin: admin}
		_, err, serr := recoverPair(t, grow, relayID, newID(t, 6), root)
		if err == nil || !errors.Is(serr, ErrMembershipMoved) {
			t.Fatalf("opener: %v; answerer: %v", err, serr)
		}
	})
}

// growingTarget adds a relay record right after it answers with the log,
// as another admin's change arriving meanwhile would.
type growingTarget struct {
	memTarget
	admin *keys.Identity
	grown bool
}

func (g *growingTarget) Records() []member.Record {
	recs := g.memTarget.Records()
	if !g.grown {
		g.grown = true
		g.mu.Lock()
		_ = g.s.Apply(g.s.Next(g.admin, member.Record{Op: member.OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/1"}, 2))
		g.mu.Unlock()
	}
	return recs
}

func cloneState(t *testing.T, s *member.State) *member.State {
	t.Helper()
	c := member.NewState(s.Vault)
	for _, r := range s.Records() {
		if err := c.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
