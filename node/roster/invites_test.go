package roster

import (
	"crypto/rand"
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
	iv.Add(code, vault)
	expired := newCode(t0.Add(time.Minute))
	iv.Add(expired, keys.VaultID{8})

	if _, _, err := iv.Take(joiner.ID(), code.Proof(other.ID()), t0); err == nil || !strings.Contains(err.Error(), "no such invite") {
		t.Fatalf("a proof made for another device: %v", err)
	}
	_, got, err := iv.Take(joiner.ID(), code.Proof(joiner.ID()), t0)
	if err != nil || got != vault {
		t.Fatalf("the right proof: vault %v, %v", got, err)
	}
	if _, _, err := iv.Take(joiner.ID(), code.Proof(joiner.ID()), t0); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("the code a second time: %v", err)
	}
	if _, _, err := iv.Take(other.ID(), expired.Proof(other.ID()), t0.Add(2*time.Minute)); err == nil {
		t.Fatal("an expired code was taken")
	}
}
