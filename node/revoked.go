package node

import (
	"errors"
	"time"

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

// noteHello records how dev answered this device's Hello: err from
// OpenHello (nil: accepted).
func (v *vault) noteHello(dev keys.DeviceID, err error) {
	var we wire.Error
	refused := errors.As(err, &we) && we.Code == wire.CodeNotMember
	if err != nil && !refused {
		return // a broken stream says nothing about membership
	}
	first, again := v.refused.Answer(dev, refused, time.Now())
	if again {
		v.log.Info("a member accepts this device again", "peer", dev)
	}
	if first {
		v.log.Error("a member refuses this device as not a member of the vault: it was probably revoked", "peer", dev)
	}
}
