package node

import (
	"errors"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// A device refused by a member while another accepts it (a new device
// whose admission has not reached that member yet) is not called revoked;
// refused by every member that answers, it is, until one accepts it again.
// A broken stream says nothing either way.
func TestRevokedFromRefusals(t *testing.T) {
	n, _ := testNode(t)
	v := n.vaultsNow()[0]
	x, y := keys.DeviceID{1}, keys.DeviceID{2}
	notMember := wire.Error{Code: wire.CodeNotMember, Reason: "not a member of this vault"}
	// What the folder's status says (logFault).
	revoked := func() *api.PathMessage {
		if m := v.logFault(); m != nil && m.Code == api.CodeRevoked {
			return m
		}
		return nil
	}
	if revoked() != nil {
		t.Fatal("revoked before any answer")
	}
	v.noteHello(y, nil)
	v.noteHello(x, notMember)
	if m := revoked(); m != nil {
		t.Fatalf("refused by one member, accepted by another: %+v", m)
	}
	v.noteHello(y, errors.New("stream reset"))
	if m := revoked(); m != nil {
		t.Fatalf("a broken stream counted as a refusal: %+v", m)
	}
	v.noteHello(y, notMember)
	m := revoked()
	if m == nil || m.Code != api.CodeRevoked {
		t.Fatalf("refused by every member that answers: %+v, want code %s", m, api.CodeRevoked)
	}
	v.noteHello(x, nil)
	if m := revoked(); m != nil {
		t.Fatalf("accepted again, still %+v", m)
	}
}
