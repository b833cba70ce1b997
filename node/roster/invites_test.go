package roster

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// TestInvites: a code admits one device once, to the vault it was issued
// for, until it expires; a wrong proof matches nothing.
func TestInvites(t *testing.T) {
	inviter, joiner, other := newIdentity(t), newIdentity(t), newIdentity(t)
	vault := keys.VaultID{7}
	newCode := func(expires time.Time) member.Invite {
		inv, err := member.NewInvite(rand.Reader, inviter.ID(), []string{"/ip4/127.0.0.1/tcp/1"}, expires.Unix())
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	var iv Invites
	code := newCode(t0.Add(time.Hour))
	iv.Add(code, vault, false)
	expired := newCode(t0.Add(time.Minute))
	iv.Add(expired, keys.VaultID{8}, false)

	if _, err := iv.Take(joiner.ID(), "", code.Proof(other.ID()), t0); err == nil || !strings.Contains(err.Error(), "no such invite") {
		t.Fatalf("a proof made for another device: %v", err)
	}
	got, err := iv.Take(joiner.ID(), "", code.Proof(joiner.ID()), t0)
	if err != nil || got.Vault != vault || got.Join != nil {
		t.Fatalf("the right proof: vault %v, join %v, %v", got.Vault, got.Join, err)
	}
	if _, err := iv.Take(joiner.ID(), "", code.Proof(joiner.ID()), t0); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("the code a second time: %v", err)
	}
	if _, err := iv.Take(other.ID(), "", expired.Proof(other.ID()), t0.Add(2*time.Minute)); err == nil {
		t.Fatal("an expired code was taken")
	}
}

// TestInvitesConfirm: a join with a confirm code waits; approving one
// spends the code and denies the others; a denial and a timeout say why.
func TestInvitesConfirm(t *testing.T) {
	inviter, real, thief, late := newIdentity(t), newIdentity(t), newIdentity(t), newIdentity(t)
	inv, err := member.NewInvite(rand.Reader, inviter.ID(), nil, t0.Add(time.Hour).Unix())
	if err != nil {
		t.Fatal(err)
	}
	var iv Invites
	iv.Add(inv, keys.VaultID{7}, true)
	take := func(id *keys.Identity) *Join {
		t.Helper()
		got, err := iv.Take(id.ID(), "", inv.Proof(id.ID()), t0)
		if err != nil || got.Join == nil {
			t.Fatalf("take: join %v, %v", got.Join, err)
		}
		return got.Join
	}
	jt, jr := take(thief), take(real)
	if jr.Words != inv.Words(real.ID()) || jt.Words == jr.Words {
		t.Fatalf("words: real %q, thief %q", jr.Words, jt.Words)
	}
	if w := iv.Waiting(); len(w) != 2 || w[0].Joiner != thief.ID() {
		t.Fatalf("waiting: %+v", w)
	}
	results := make(chan error, 2)
	go func() { results <- iv.Wait(context.Background(), jt) }()
	if err := iv.Decide(real.ID(), true); err != nil {
		t.Fatal(err)
	}
	if err := iv.Wait(context.Background(), jr); err != nil {
		t.Fatalf("approved join: %v", err)
	}
	if err := <-results; err == nil || !strings.Contains(err.Error(), "another device") {
		t.Fatalf("the other join: %v", err)
	}
	if _, err := iv.Take(late.ID(), "", inv.Proof(late.ID()), t0); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("the code after an approval: %v", err)
	}
	if err := iv.Decide(thief.ID(), true); !errors.Is(err, ErrNoSuchJoin) {
		t.Fatalf("deciding a settled join: %v", err)
	}

	// Denied, and withdrawn when no one decides.
	inv2, _ := member.NewInvite(rand.Reader, inviter.ID(), nil, t0.Add(time.Hour).Unix())
	iv.Add(inv2, keys.VaultID{7}, true)
	got, err := iv.Take(real.ID(), "", inv2.Proof(real.ID()), t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := iv.Decide(real.ID(), false); err != nil {
		t.Fatal(err)
	}
	if err := iv.Wait(context.Background(), got.Join); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("denied join: %v", err)
	}
	got, _ = iv.Take(real.ID(), "", inv2.Proof(real.ID()), t0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := iv.Wait(ctx, got.Join); err == nil || len(iv.Waiting()) != 0 {
		t.Fatalf("a wait that ended: %v, %d still waiting", err, len(iv.Waiting()))
	}
	// At most MaxWaitingJoins wait on one code.
	for i := range MaxWaitingJoins + 1 {
		id := newIdentity(t)
		_, err := iv.Take(id.ID(), "", inv2.Proof(id.ID()), t0)
		if (err != nil) != (i == MaxWaitingJoins) {
			t.Fatalf("join %d: %v", i, err)
		}
	}
}
