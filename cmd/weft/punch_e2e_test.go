//go:build linux

package main

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/weftsync/weft/node/connect"
)

// The NAT test network of nat_e2e_test.go with a public side libp2p
// punches through (withPunchableNATs): the same namespaces, the same
// private networks and masquerading routers, but
//
//   - public addresses libp2p calls public. libp2p tries a hole punch
//     (DCUtR) only when the host knows a public address of its own
//     (manet.IsPublicAddr of what the relay observes), and the
//     documentation ranges of the plain lab are not. Neither is 100.64/10
//     (shared address space, in manet's private list). 192.0.0.64/26 is:
//     manet leaves out of public only 192.0.0.0/26, yet all of
//     192.0.0.0/24 is the IETF protocol assignment block, "globally
//     reachable: false" (RFC 6890), and .64-.127 is assigned to nothing.
//     Like every lab address it exists only inside the lab's namespaces,
//     which have no route out of the lab;
//
//     relay 192.0.0.74   router A 192.0.0.65   router B 192.0.0.66
//
//   - routers that drop what arrives on their public side for the router
//     itself (iptables -A INPUT -i wan -j DROP), as home routers do. A
//     punch needs it. Both devices dial at once (a TCP simultaneous open;
//     the devices listen on TCP only, and libp2p dials from the listen
//     port), so one side's SYN reaches the other's router before that
//     router has seen its own device's SYN go out. A plain MASQUERADE
//     router takes it for a connection to itself and its kernel answers
//     with a reset, which ends the dialling socket: libp2p logs
//     "connection refused" within milliseconds, on every attempt (tried
//     here twice, 3 minutes each: no punch; 9 attempts in 3 rounds in the
//     run logged with GOLOG_LOG_LEVEL=p2p-holepunch=debug). Conntrack
//     has also confirmed an entry for that SYN by then, whose tuple the
//     device's own mapping would need (MASQUERADE would pick another
//     port). Dropped in the filter INPUT chain, the SYN goes unanswered
//     and never reaches conntrack's confirmation (which runs last on
//     INPUT), so no entry stays; the dialling side's socket keeps waiting,
//     and the other device's SYN, leaving on its own port, arrives at a
//     router that has just seen the first SYN go out, matches that
//     mapping and is let in: the punch succeeds at the first attempt in a
//     few milliseconds. Packets of connections a device made are
//     translated back in PREROUTING and go through FORWARD, not INPUT, so
//     nothing else changes.
const (
	punchRelayIP   = "192.0.0.74"
	punchRouterAIP = "192.0.0.65"
	punchRouterBIP = "192.0.0.66"
)

// withPunchableNATs is the natOption described above.
func withPunchableNATs(lab *natLab) {
	lab.relayIP, lab.routerAIP, lab.routerBIP = punchRelayIP, punchRouterAIP, punchRouterBIP
	lab.publicBits = 26
	lab.dropUnsolicited = true
}

// checkSilentRouters proves the routers drop what is sent to them from
// the public side: a TCP dial from the relay to each router's public
// address gets no answer (a reset would be "connection refused").
func (lab natLab) checkSilentRouters(t *testing.T) {
	t.Helper()
	for _, ip := range []string{lab.routerAIP, lab.routerBIP} {
		err := inNetns(lab.relay, func() error {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, natRelayPort), 2*time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		var ne net.Error
		switch {
		case err == nil:
			t.Fatalf("the relay reached router %s on its public side", ip)
		case errors.Is(err, syscall.ECONNREFUSED):
			t.Fatalf("router %s answers unsolicited packets on its public side (refused): %v", ip, err)
		case !errors.As(err, &ne) || !ne.Timeout():
			t.Fatalf("dialling router %s from the relay: %v, want a timeout", ip, err)
		}
	}
}

// waitPunched waits until a and b each see the other through a direct
// connection (holepunched, or direct if DCUtR's dial-back got through
// first) and returns how long each took from now.
func waitPunched(t *testing.T, a, b *device, limit time.Duration) map[string]time.Duration {
	t.Helper()
	start := time.Now()
	took := map[string]time.Duration{}
	last := map[string]string{}
	for {
		for _, d := range []*device{a, b} {
			if _, ok := took[d.name]; ok {
				continue
			}
			kinds := ""
			for _, p := range d.status().Peers {
				if p.Role != "device" {
					continue
				}
				kinds += p.Connection + " "
				if p.Connection == connect.ConnHolepunched || p.Connection == connect.ConnDirect {
					took[d.name] = time.Since(start)
					t.Logf("%s sees %s %s after %v", d.name, p.ID, p.Connection, took[d.name].Round(time.Millisecond))
				}
			}
			last[d.name] = kinds
		}
		if len(took) == 2 {
			return took
		}
		if time.Since(start) > limit {
			t.Fatalf("no direct connection after %v: a sees [%s], b sees [%s]\n--- a log:\n%s\n--- b log:\n%s",
				limit, last["a"], last["b"], a.logTail(), b.logTail())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestMeasureEditsHolePunchedBehindNATs is a measurement, not a test: it
// runs only with WEFT_MEASURE=1 (B2 hole-punched behind NATs) and asserts
// nothing about time. The network of TestMeasureEditsThroughRelayBehindNATs
// with withPunchableNATs: the devices meet through the relay's circuit,
// libp2p's DCUtR punches a direct connection through both routers, and
// once both report it (within 3 minutes of b starting behind its NAT, the
// time logged) B2's edit is measured each way by measureEdits, as for the
// relayed path. The peers' connections and in_sync are logged at the end;
// a device peer no longer direct then is an error, since the numbers
// would not be the punched path's alone.
func TestMeasureEditsHolePunchedBehindNATs(t *testing.T) {
	if os.Getenv("WEFT_MEASURE") != "1" {
		t.Skip("a measurement: WEFT_MEASURE=1 runs it")
	}
	requireNetns(t, "iptables")
	lab := newNATLab(t, withPunchableNATs)
	lab.checkNAT(t)
	lab.checkSilentRouters(t)
	rl := startRelay(t, lab.relay, "--listen", "/ip4/"+lab.relayIP+"/tcp/"+natRelayPort)
	a, b, _ := pairBehindNATs(t, lab, rl)
	took := waitPunched(t, a, b, 3*time.Minute)
	t.Logf("punch: both direct %v after b started behind its NAT (a %v, b %v)",
		max(took["a"], took["b"]).Round(time.Millisecond), took["a"].Round(time.Millisecond), took["b"].Round(time.Millisecond))
	measureEdits(t, a, b, "hole-punched")
	for _, d := range []*device{a, b} {
		for _, p := range d.status().Peers {
			t.Logf("%s: peer %s (%s) %s, in_sync %v", d.name, p.ID, p.Role, p.Connection, p.InSync)
			if p.Role == "device" && p.Connection != connect.ConnHolepunched && p.Connection != connect.ConnDirect {
				t.Errorf("%s: peer %s %s at the end, want the punched connection still there", d.name, p.ID, p.Connection)
			}
		}
	}
}
