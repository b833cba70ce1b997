package roster

import (
	"errors"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Invites are the one-time codes a device issued and has not yet seen
// used (`weft invite`; docs/pairing.md). Codes live in memory only: a
// restart of the agent invalidates every outstanding code, which errs on
// the side of safety. It is safe for concurrent use.
type Invites struct {
	mu   sync.Mutex // guards list
	list []*pending
}

// pending is one issued code and the vault it admits to.
type pending struct {
	inv   member.Invite
	vault keys.VaultID
	used  bool
}

// Add records a new code for vault.
func (iv *Invites) Add(inv member.Invite, vault keys.VaultID) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	iv.list = append(iv.list, &pending{inv: inv, vault: vault})
}

// Take finds the code whose proof joiner presents, marks it used and
// returns it with the vault it admits to. It fails if no code matches, or
// the matching one expired or was used: a code works once.
func (iv *Invites) Take(joiner keys.DeviceID, proof []byte, now time.Time) (member.Invite, keys.VaultID, error) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	for _, p := range iv.list {
		if p.inv.CheckProof(joiner, proof) != nil {
			continue
		}
		if p.used {
			return member.Invite{}, keys.VaultID{}, errors.New("this invite code was already used")
		}
		if err := p.inv.CheckExpiry(now.Unix()); err != nil {
			return member.Invite{}, keys.VaultID{}, err
		}
		p.used = true
		return p.inv, p.vault, nil
	}
	return member.Invite{}, keys.VaultID{}, errors.New("no such invite code on this device (wrong code, or the agent restarted since it was issued)")
}
