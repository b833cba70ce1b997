package node

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// A revoked device is not told it was revoked (issue 18 is where that
// changes): the revocation reaches it only if it was connected when the
// record was written, and afterwards every member refuses its streams
// with "not a member". Before, it kept saying in-sync and logged nothing.
// Now the folder is in error with code `revoked` when this device's own
// membership log says it was revoked, or when members refuse it and none
// accepts it (status, doctor, one log line). A member that accepts this
// device while another refuses it (a new device whose admission has not
// reached that member yet) keeps it out of error.

// refusals is what the members this device opened streams to answered.
type refusals struct {
	mu     sync.Mutex
	by     map[keys.DeviceID]time.Time // members whose last answer refused this device as not a member
	ok     map[keys.DeviceID]time.Time // members whose last answer accepted it
	logged bool                        // the refusal was logged (once per episode)
}

// noteHello records how dev answered this device's Hello: err from
// OpenHello (nil: accepted).
func (v *vault) noteHello(dev keys.DeviceID, err error) {
	var we wire.Error
	refused := errors.As(err, &we) && we.Code == wire.CodeNotMember
	if err != nil && !refused {
		return // a broken stream says nothing about membership
	}
	r := &v.refused
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by, r.ok = map[keys.DeviceID]time.Time{}, map[keys.DeviceID]time.Time{}
	}
	if !refused {
		if _, was := r.by[dev]; was {
			v.log.Info("a member accepts this device again", "peer", dev)
		}
		delete(r.by, dev)
		r.ok[dev] = time.Now()
		if len(r.by) == 0 {
			r.logged = false
		}
		return
	}
	delete(r.ok, dev)
	r.by[dev] = time.Now()
	if !r.logged {
		r.logged = true
		v.log.Error("a member refuses this device as not a member of the vault: it was probably revoked", "peer", dev)
	}
}

// revokedMessage is the status error of a revoked device, or nil.
func (v *vault) revokedMessage() *api.PathMessage {
	if v.roster.IsRevoked(v.n.id.ID()) {
		return &api.PathMessage{Code: api.CodeRevoked, Reason: "this device was revoked from the vault (its membership log says so): nothing it writes is accepted, and nothing new reaches it; ask an admin to add it again (`weft invite` on an admin device, then `weft join`)"}
	}
	r := &v.refused
	r.mu.Lock()
	n, accepted := len(r.by), len(r.ok)
	r.mu.Unlock()
	if n == 0 || accepted > 0 {
		return nil
	}
	return &api.PathMessage{Code: api.CodeRevoked, Reason: fmt.Sprintf("%d members this device reached refuse it as not a member of the vault, and none accepts it: it was probably revoked; ask an admin to add it again (`weft invite` on an admin device, then `weft join`)", n)}
}
