package roster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Invites are the one-time codes a device issued and has not yet seen
// used (`weft invite`; docs/pairing.md), and the joins waiting for a
// person's approval (`weft invite --confirm`). Codes live in memory only:
// a restart of the agent invalidates every outstanding code and ends every
// waiting join, which errs on the side of safety. It is safe for
// concurrent use.
type Invites struct {
	mu   sync.Mutex // guards list and the codes' joins
	list []*code
}

// code is one issued code and the vault it admits to.
type code struct {
	inv     member.Invite
	vault   keys.VaultID
	confirm bool    // a join waits for approval (Decide)
	used    bool    // a join went through: the code is spent
	joins   []*Join // waiting for approval
}

// MaxWaitingJoins bounds the joins waiting on one code: the person's own
// device and a few others who saw the code. More are refused until one
// is decided.
const MaxWaitingJoins = 4

// Join is a join of a confirm code waiting for a person's approval.
type Join struct {
	Joiner keys.DeviceID
	Name   string // the name the joiner asks for ("" for none)
	Vault  keys.VaultID
	Words  string    // member.Invite.Words: what both devices show
	Since  time.Time // when it asked

	code     *code
	decided  chan struct{} // closed once decided or withdrawn
	approved bool
	reason   string // why it was denied
}

// Taken is a code a joiner's proof matched.
type Taken struct {
	Invite member.Invite
	Vault  keys.VaultID
	// Join is the join waiting for approval, for a code issued with
	// confirmation (nil otherwise: the join goes through at once).
	Join *Join
}

// Add records a new code for vault. With confirm, a join by it waits for
// a person's approval (Decide) and the code stays usable until one is
// approved.
func (iv *Invites) Add(inv member.Invite, vault keys.VaultID, confirm bool) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	iv.list = append(iv.list, &code{inv: inv, vault: vault, confirm: confirm})
}

// Take finds the code whose proof joiner presents. A code without
// confirmation is marked used and returned: a code works once. One with
// confirmation gets a waiting Join (the same joiner asking again replaces
// its earlier wait). It fails if no code matches, or the matching one
// expired, was used, or has MaxWaitingJoins waiting.
func (iv *Invites) Take(joiner keys.DeviceID, name string, proof []byte, now time.Time) (Taken, error) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	for _, c := range iv.list {
		if c.inv.CheckProof(joiner, proof) != nil {
			continue
		}
		if c.used {
			return Taken{}, errors.New("this invite code was already used")
		}
		if err := c.inv.CheckExpiry(now.Unix()); err != nil {
			return Taken{}, err
		}
		t := Taken{Invite: c.inv, Vault: c.vault}
		if !c.confirm {
			c.used = true
			return t, nil
		}
		for _, j := range c.joins {
			if j.Joiner == joiner {
				decideLocked(j, false, "the same device asked again")
			}
		}
		if len(c.joins) >= MaxWaitingJoins {
			return Taken{}, fmt.Errorf("%d joins with this code already wait for approval on the inviting device", len(c.joins))
		}
		t.Join = &Join{Joiner: joiner, Name: name, Vault: c.vault, Words: c.inv.Words(joiner), Since: now, code: c, decided: make(chan struct{})}
		c.joins = append(c.joins, t.Join)
		return t, nil
	}
	return Taken{}, errors.New("no such invite code on this device (wrong code, or the agent restarted since it was issued)")
}

// decideLocked settles j and removes it from its code's waiting joins.
// iv.mu must be held.
func decideLocked(j *Join, approve bool, reason string) {
	select {
	case <-j.decided:
		return
	default:
	}
	j.approved, j.reason = approve, reason
	close(j.decided)
	j.code.joins = slices.DeleteFunc(j.code.joins, func(o *Join) bool { return o == j })
}

// Wait blocks until j is decided, or ctx ends (then j is withdrawn). It
// returns nil once approved, and an error saying why otherwise.
func (iv *Invites) Wait(ctx context.Context, j *Join) error {
	select {
	case <-j.decided:
	case <-ctx.Done():
		iv.mu.Lock()
		decideLocked(j, false, "no one approved it in time")
		iv.mu.Unlock()
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if !j.approved {
		return errors.New(j.reason)
	}
	return nil
}

// Waiting returns the joins waiting for approval, oldest first.
func (iv *Invites) Waiting() []Join {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	var out []Join
	for _, c := range iv.list {
		for _, j := range c.joins {
			out = append(out, Join{Joiner: j.Joiner, Name: j.Name, Vault: j.Vault, Words: j.Words, Since: j.Since})
		}
	}
	slices.SortFunc(out, func(a, b Join) int { return a.Since.Compare(b.Since) })
	return out
}

// ErrNoSuchJoin means no join of that device waits for approval.
var ErrNoSuchJoin = errors.New("no join of that device waits for approval")

// Decide approves or denies the waiting join of joiner. Approving spends
// the code: its other waiting joins are denied.
func (iv *Invites) Decide(joiner keys.DeviceID, approve bool) error {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	for _, c := range iv.list {
		for _, j := range c.joins {
			if j.Joiner != joiner {
				continue
			}
			if !approve {
				decideLocked(j, false, "the inviting device's user denied this join")
				return nil
			}
			c.used = true
			for _, o := range slices.Clone(c.joins) {
				if o != j {
					decideLocked(o, false, "another device's join with this code was approved")
				}
			}
			decideLocked(j, true, "")
			return nil
		}
	}
	return ErrNoSuchJoin
}
