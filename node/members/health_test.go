package members

import (
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// TestHealthMessages: each message applies only when its fact holds, and
// says what to do.
func TestHealthMessages(t *testing.T) {
	if RevokedMessage(false, 0) != nil || LostMessage(false) != nil || ForkMessage(nil) != nil {
		t.Fatal("a message for a healthy membership")
	}
	if m := RevokedMessage(true, 0); m == nil || m.Code != api.CodeRevoked || !strings.Contains(m.Reason, "membership log says so") {
		t.Errorf("revoked in the log: %+v", m)
	}
	if m := RevokedMessage(false, 2); m == nil || m.Code != api.CodeRevoked || !strings.Contains(m.Reason, "2 members") {
		t.Errorf("refused by two: %+v", m)
	}
	if m := LostMessage(true); m == nil || m.Code != api.CodeMembershipLost {
		t.Errorf("lost: %+v", m)
	}
	var a, b keys.DeviceID
	a[0], b[0] = 1, 2
	f := &roster.Fork{Seq: 7, Held: member.Record{Op: member.OpAdd, Signer: a}, Other: member.Record{Op: member.OpRevoke, Signer: b}}
	if m := ForkMessage(f); m == nil || m.Code != api.CodeMembershipForked || !strings.Contains(m.Reason, "record 7") {
		t.Errorf("fork: %+v", m)
	}
}
