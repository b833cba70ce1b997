//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/connect"
)

// The NAT test network (docs/relay.md, "Tested behind NATs"). Only
// documentation ranges are used, so nothing here can collide with a real
// network, and libp2p treats none of it as public (it will not try a hole
// punch: this test proves the store-and-forward path; withPunchableNATs
// in punch_e2e_test.go builds the same network with a public side it
// punches through).
//
//	         public 203.0.113.0/24 (bridge in namespace "sw")
//	relay 203.0.113.10   router A 203.0.113.1   router B 203.0.113.2
//	                          | MASQUERADE           | MASQUERADE
//	               198.51.100.0/25          198.51.100.128/25
//	               device A .10             device B .130
const (
	natRelayIP   = "203.0.113.10"
	natRouterAIP = "203.0.113.1"
	natRouterBIP = "203.0.113.2"
	natDeviceAIP = "198.51.100.10"
	natDeviceBIP = "198.51.100.130"
	natRelayPort = "4001"
	natMetrics   = natRelayIP + ":9100"
)

// natLab names the namespaces of the NAT test network and the public
// side's addresses.
type natLab struct {
	sw, relay, routerA, routerB, a, b string
	// The public side: the relay's and the routers' addresses on it, and
	// its prefix length. newNATLab's defaults are the constants above;
	// withPunchableNATs (punch_e2e_test.go) changes them.
	relayIP, routerAIP, routerBIP string
	publicBits                    int
	// dropUnsolicited makes each router drop what arrives on its public
	// side for the router itself (see withPunchableNATs).
	dropUnsolicited bool
}

// natOption changes the NAT test network before newNATLab builds it.
type natOption func(*natLab)

// newNATLab builds the network above (changed by opts); every namespace
// (and with it every veth and the bridge) is deleted when the test ends.
// Namespaces left by a killed earlier run are removed first.
func newNATLab(t *testing.T, opts ...natOption) natLab {
	t.Helper()
	removeStaleNetns(t, "nat")
	lab := natLab{
		sw: netnsName("nat", "sw"), relay: netnsName("nat", "relay"),
		routerA: netnsName("nat", "ra"), routerB: netnsName("nat", "rb"),
		a: netnsName("nat", "a"), b: netnsName("nat", "b"),
		relayIP: natRelayIP, routerAIP: natRouterAIP, routerBIP: natRouterBIP,
		publicBits: 24,
	}
	for _, o := range opts {
		o(&lab)
	}
	for _, ns := range []string{lab.sw, lab.relay, lab.routerA, lab.routerB, lab.a, lab.b} {
		addNetns(t, ns)
	}
	// Veth pairs are made inside the namespaces (ip -n ... peer netns ...),
	// so no interface name is ever taken in the host's namespace.
	steps := [][]string{
		{"-n", lab.sw, "link", "add", "br0", "type", "bridge"},
		{"-n", lab.sw, "link", "set", "br0", "up"},
	}
	for _, leg := range []struct{ port, ns, addr string }{
		{"p-relay", lab.relay, lab.relayIP},
		{"p-ra", lab.routerA, lab.routerAIP},
		{"p-rb", lab.routerB, lab.routerBIP},
	} {
		steps = append(steps,
			[]string{"-n", lab.sw, "link", "add", leg.port, "type", "veth", "peer", "name", "wan", "netns", leg.ns},
			[]string{"-n", lab.sw, "link", "set", leg.port, "master", "br0", "up"},
			[]string{"-n", leg.ns, "addr", "add", leg.addr + "/" + strconv.Itoa(lab.publicBits), "dev", "wan"},
			[]string{"-n", leg.ns, "link", "set", "wan", "up"},
		)
	}
	for _, lan := range []struct{ router, dev, gw, addr string }{
		{lab.routerA, lab.a, "198.51.100.1", natDeviceAIP},
		{lab.routerB, lab.b, "198.51.100.129", natDeviceBIP},
	} {
		steps = append(steps,
			[]string{"-n", lan.router, "link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", lan.dev},
			[]string{"-n", lan.router, "addr", "add", lan.gw + "/25", "dev", "lan"},
			[]string{"-n", lan.router, "link", "set", "lan", "up"},
			[]string{"-n", lan.dev, "addr", "add", lan.addr + "/25", "dev", "eth0"},
			[]string{"-n", lan.dev, "link", "set", "eth0", "up"},
			[]string{"-n", lan.dev, "route", "add", "default", "via", lan.gw},
		)
	}
	for _, s := range steps {
		if err := ipRun(s...); err != nil {
			t.Fatal(err)
		}
	}
	// The routers forward and masquerade what leaves on the public side.
	// They have no default route: a packet for the other private network
	// has nowhere to go, as on the internet.
	for _, r := range []string{lab.routerA, lab.routerB} {
		err := inNetns(r, func() error {
			return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1\n"), 0o644)
		})
		if err != nil {
			t.Fatalf("forwarding on in %s: %v", r, err)
		}
		if err := nsRun(r, "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE"); err != nil {
			t.Skipf("iptables cannot masquerade inside a namespace here: %v", err)
		}
		if lab.dropUnsolicited {
			if err := nsRun(r, "iptables", "-A", "INPUT", "-i", "wan", "-j", "DROP"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return lab
}

// listenIn listens on addr (IP:port, port 0 for any) inside namespace ns.
func listenIn(t *testing.T, ns, addr string) *net.TCPListener {
	t.Helper()
	var ln net.Listener
	err := inNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatalf("listening on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.(*net.TCPListener)
}

// dialIn dials addr from inside namespace ns, giving up after 5 seconds.
func dialIn(ns, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(ns, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	})
	return c, err
}

// checkNAT proves the network is what the test claims: each device
// reaches the relay and the relay sees it as its router's public address;
// neither device, nor the relay, reaches a private address across it.
func (lab natLab) checkNAT(t *testing.T) {
	t.Helper()
	probe := listenIn(t, lab.relay, lab.relayIP+":0")
	for _, c := range []struct{ name, ns, want string }{
		{"a", lab.a, lab.routerAIP},
		{"b", lab.b, lab.routerBIP},
	} {
		conn, err := dialIn(c.ns, probe.Addr().String())
		if err != nil {
			t.Fatalf("device %s cannot reach the relay's network: %v", c.name, err)
		}
		_ = probe.SetDeadline(time.Now().Add(10 * time.Second))
		in, err := probe.Accept()
		conn.Close()
		if err != nil {
			t.Fatalf("relay side of device %s's probe: %v", c.name, err)
		}
		got, _, _ := net.SplitHostPort(in.RemoteAddr().String())
		in.Close()
		if got != c.want {
			t.Fatalf("the relay sees device %s at %s, want its router's address %s (no NAT?)", c.name, got, c.want)
		}
	}
	lnA := listenIn(t, lab.a, natDeviceAIP+":0")
	lnB := listenIn(t, lab.b, natDeviceBIP+":0")
	for _, c := range []struct{ from, ns, to string }{
		{"b", lab.b, lnA.Addr().String()},
		{"a", lab.a, lnB.Addr().String()},
		{"the relay", lab.relay, lnA.Addr().String()},
		{"the relay", lab.relay, lnB.Addr().String()},
	} {
		if conn, err := dialIn(c.ns, c.to); err == nil {
			conn.Close()
			t.Fatalf("%s reached the private address %s: the networks are not separated", c.from, c.to)
		}
	}
}

// scrapeMetrics reads the relay's /metrics from inside namespace ns and
// returns every sample by its series ("name" or `name{labels}`).
func scrapeMetrics(ns, addr string) (map[string]float64, error) {
	conn, err := dialIn(ns, addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return nil, fmt.Errorf("metrics response: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("metrics body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s: %s", resp.Status, body)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, nil
}

// metricSum adds every series of metric name.
func metricSum(m map[string]float64, name string) float64 {
	var sum float64
	for series, v := range m {
		if series == name || strings.HasPrefix(series, name+"{") {
			sum += v
		}
	}
	return sum
}

// requireReservations checks that every device in ds holds a circuit v2
// reservation on the relay in namespace ns (node/connect/reservations.go): the
// relay counts at least len(ds) reservations open, and each device logged
// one held.
func requireReservations(t *testing.T, ns string, ds ...*device) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		m, err := scrapeMetrics(ns, natMetrics)
		held := m[`libp2p_relaysvc_reservations_total{type="opened"}`] - m[`libp2p_relaysvc_reservations_total{type="closed"}`]
		if err == nil && held >= float64(len(ds)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("relay reservations held: got %v (err %v), want %d", held, err, len(ds))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, d := range ds {
		if !strings.Contains(d.logAll(), "relay reservation held") {
			t.Errorf("%s: no \"relay reservation held\" in its log", d.name)
		}
	}
}

// waitHas waits until d's folder holds every file of want, byte-identical.
func waitHas(t *testing.T, d *device, want map[string][]byte, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got, err := tree(d.folder)
		missing := ""
		if err != nil {
			missing = err.Error()
		}
		for name, body := range want {
			if err == nil && got[name] != "file:"+string(body) {
				missing = name
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not there (or not byte-identical) after %s\n%s", d.name, missing, limit, d.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pairBehindNATs starts device a behind router A with relay rl, joins b
// to it and starts b behind router B. Joining dials the inviter at the
// addresses in the code, which are a's private ones: b joins on a's
// network (a laptop paired at home), then runs behind its own NAT. pairing
// is what a had received from each peer once b joined, before b runs.
func pairBehindNATs(t *testing.T, lab natLab, rl *relayProc) (a, b *device, pairing map[string]int64) {
	t.Helper()
	a, b = newDevice(t, "a"), newDevice(t, "b")
	a.netns = lab.a
	a.upArgs = []string{"--listen", "/ip4/" + natDeviceAIP + "/tcp/4001", "--mdns=false"}
	a.must("init", a.folder, "--relay", rl.addr())
	a.up()
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.netns = lab.a
	b.must("join", lines[len(lines)-1], b.folder)
	pairing = map[string]int64{}
	for _, p := range a.status().Peers {
		pairing[p.ID] = p.BytesReceived
	}
	b.netns = lab.b
	b.upArgs = []string{"--listen", "/ip4/" + natDeviceBIP + "/tcp/4001", "--mdns=false"}
	b.up()
	return a, b, pairing
}

// TestSyncThroughRelayBehindNATs runs a relay and two devices as real
// processes, each device behind its own masquerading router, so neither
// can reach the other and both reach the relay. A's files reach B and B's
// reach A byte-identical, through the relay's store, and each then shows
// the other in_sync (what the relay passes on): the relay's metrics
// count what it stored and served, and neither device ever exchanged a
// byte with the other.
func TestSyncThroughRelayBehindNATs(t *testing.T) {
	requireNetns(t, "iptables")
	lab := newNATLab(t)
	lab.checkNAT(t)

	rl := startRelay(t, lab.relay, "--listen", "/ip4/"+natRelayIP+"/tcp/"+natRelayPort, "--metrics", natMetrics)
	if !strings.HasPrefix(rl.addr(), "/ip4/"+natRelayIP+"/tcp/"+natRelayPort+"/p2p/") {
		t.Fatalf("relay address: got %s, want it on %s", rl.addr(), natRelayIP)
	}
	// Pairing itself sent a a few bytes from b; from here on, none.
	a, b, pairing := pairBehindNATs(t, lab, rl)

	rng := rand.New(rand.NewPCG(11, 12))
	files := func(who string) map[string][]byte {
		out := map[string][]byte{}
		for i := range 5 {
			out[fmt.Sprintf("notes/%s-%d.md", who, i)] = fmt.Appendf(nil, "# note %d from %s\n%x\n", i, who, rng.Uint64())
		}
		out["bin/"+who+".bin"] = randBytes(rng, 2<<20)
		return out
	}
	fromA := files("a")
	for name, body := range fromA {
		a.write(name, body)
	}
	waitHas(t, b, fromA, 2*time.Minute)
	fromB := files("b")
	for name, body := range fromB {
		b.write(name, body)
	}
	waitHas(t, a, fromB, 2*time.Minute)
	waitSame(t, a, b, time.Minute, nil)
	// Identical, never in direct contact: each says the other holds
	// everything it holds, from what the relay passes on (wire.Holds).
	// Before, both said in_sync false.
	for _, d := range []*device{a, b} {
		waitStatus(t, d, time.Minute, func(st api.Status) error {
			devices := 0
			for _, p := range st.Peers {
				if p.Role != "device" {
					continue
				}
				devices++
				if !p.InSync {
					return fmt.Errorf("peer %s (%s) in_sync false", p.ID, p.Connection)
				}
			}
			if devices != 1 {
				return fmt.Errorf("%d device peers listed, want the other device", devices)
			}
			return nil
		})
	}

	// The bytes went through the relay's store.
	m, err := scrapeMetrics(lab.relay, natMetrics)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("relay: %v entries and %v chunks stored, %v entries and %v chunks served, %v bytes sent",
		metricSum(m, "weft_relay_entries_stored_total"), metricSum(m, "weft_relay_chunks_stored_total"),
		metricSum(m, "weft_relay_entries_served_total"), metricSum(m, "weft_relay_chunks_served_total"),
		metricSum(m, "weft_relay_bytes_sent_total"))
	for _, name := range []string{"weft_relay_entries_stored_total", "weft_relay_chunks_stored_total", "weft_relay_entries_served_total", "weft_relay_chunks_served_total"} {
		if metricSum(m, name) <= 0 {
			t.Errorf("relay metric %s: got %v, want > 0", name, metricSum(m, name))
		}
	}
	if got := metricSum(m, "weft_relay_bytes_sent_total"); got < 2*(2<<20) {
		t.Errorf("relay sent %v bytes, want at least both 2 MiB files", got)
	}
	// And never directly between the devices: each got the other's big
	// file from the relay and not one byte from the other device.
	for _, d := range []*device{a, b} {
		st := d.status()
		before := pairing
		if d == b {
			before = nil // b's agent never met a
		}
		var relays int
		for _, p := range st.Peers {
			t.Logf("%s: peer %s (%s) %s, %d bytes received", d.name, p.ID, p.Role, p.Connection, p.BytesReceived)
			switch p.Role {
			case "relay":
				relays++
				if p.Connection == "offline" || p.BytesReceived < 2<<20 {
					t.Errorf("%s: relay peer %+v, want connected with at least 2 MiB received from it", d.name, p)
				}
			default:
				if p.Connection != "offline" && p.Connection != connect.ConnRelayed {
					t.Errorf("%s: peer %s connected %q, want no direct connection (offline or relayed)", d.name, p.ID, p.Connection)
				}
				if got := p.BytesReceived - before[p.ID]; got != 0 {
					t.Errorf("%s: received %d bytes from device %s since pairing, want 0 (everything through the relay)", d.name, got, p.ID)
				}
			}
		}
		if relays != 1 {
			t.Errorf("%s: %d relays among its peers, want 1: %+v", d.name, relays, st.Peers)
		}
	}
	requireReservations(t, lab.relay, a, b)
}

// TestMeasureEditsThroughRelayBehindNATs is a measurement, not a test: it
// runs only with WEFT_MEASURE=1 (docs/benchmarks.md, "B2 through the relay
// behind NATs") and asserts nothing about time. Two devices, each behind
// its own masquerading router, and a relay, as in
// TestSyncThroughRelayBehindNATs; once they are in sync, one appends 1 KiB
// to a note 20 times, 500 ms apart (B2's edit), and the time from the
// write to the other device's file holding it is logged, each way, with
// its median and 95th percentile.
func TestMeasureEditsThroughRelayBehindNATs(t *testing.T) {
	if os.Getenv("WEFT_MEASURE") != "1" {
		t.Skip("a measurement: WEFT_MEASURE=1 runs it")
	}
	requireNetns(t, "iptables")
	lab := newNATLab(t)
	lab.checkNAT(t)
	rl := startRelay(t, lab.relay, "--listen", "/ip4/"+natRelayIP+"/tcp/"+natRelayPort, "--metrics", natMetrics)
	a, b, _ := pairBehindNATs(t, lab, rl)
	measureEdits(t, a, b, "through the relay")
	// The relay's cost per relayed megabyte: random files of 64 MiB, then
	// 256 MiB, from a to b, the relay's CPU seconds (utime + stime) and
	// memory around each (its memory before the first too), so that what a
	// relayed megabyte costs in memory shows as the growth between sizes.
	hwm0, rss0 := procMem(t, rl.cmd.Process.Pid)
	t.Logf("relay before the files: peak RSS %d MiB, RSS %d MiB", hwm0>>10, rss0>>10)
	for i, mib := range []int{64, 256} {
		cpu0 := procCPU(t, rl.cmd.Process.Pid)
		big := randBytes(rand.New(rand.NewPCG(uint64(mib), 1)), mib<<20)
		name := fmt.Sprintf("big%d.bin", i)
		start := time.Now()
		a.write(name, big)
		waitHas(t, b, map[string][]byte{name: big}, 10*time.Minute)
		took := time.Since(start)
		cpu := procCPU(t, rl.cmd.Process.Pid) - cpu0
		hwm, rss := procMem(t, rl.cmd.Process.Pid)
		t.Logf("%d MiB a -> relay -> b: %v (%.1f MiB/s); relay CPU %.2f s (%.1f ms per relayed MiB), relay peak RSS %d MiB, RSS now %d MiB",
			mib, took.Round(time.Millisecond), float64(mib)/took.Seconds(), cpu, 1000*cpu/float64(mib), hwm>>10, rss>>10)
	}
	for _, d := range []*device{a, b} {
		for _, p := range d.status().Peers {
			t.Logf("%s: peer %s (%s) %s, in_sync %v", d.name, p.ID, p.Role, p.Connection, p.InSync)
		}
	}
}

// measureEdits is B2's edit between a and b: a writes a note and b gets
// it; then, each way, one appends 1 KiB to the note 20 times, 500 ms
// apart, and the time from the write to the other's file holding it is
// logged ("a -> b <via>: p50 ..."), with its median and 95th percentile.
func measureEdits(t *testing.T, a, b *device, via string) {
	t.Helper()
	a.write("note.md", []byte("# note\n"))
	waitHas(t, b, map[string][]byte{"note.md": []byte("# note\n")}, 2*time.Minute)
	for _, dir := range []struct {
		name     string
		from, to *device
	}{{"a -> b", a, b}, {"b -> a", b, a}} {
		body, _ := os.ReadFile(dir.from.folder + "/note.md")
		var lat []time.Duration
		for i := range 20 {
			body = append(body, fmt.Appendf(nil, "%04d %s\n", i, strings.Repeat("x", 1018))...)
			start := time.Now()
			dir.from.writeAtomic("note.md", body)
			for {
				got, _ := os.ReadFile(dir.to.folder + "/note.md")
				if len(got) == len(body) {
					break
				}
				if time.Since(start) > 30*time.Second {
					t.Fatalf("%s: edit %d did not arrive in 30 s", dir.name, i)
				}
				time.Sleep(2 * time.Millisecond)
			}
			lat = append(lat, time.Since(start))
			time.Sleep(500 * time.Millisecond)
		}
		sorted := slices.Clone(lat)
		slices.Sort(sorted)
		t.Logf("%s %s: p50 %v, p95 %v, max %v (all: %v)", dir.name,
			via, sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)*95/100].Round(time.Millisecond),
			sorted[len(sorted)-1].Round(time.Millisecond), lat)
	}
}

// procCPU is a process's user and system CPU seconds (/proc/PID/stat).
func procCPU(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ, 100 on Linux
}

// procMem is a process's peak and current resident set, in KiB.
func procMem(t *testing.T, pid int) (hwm, rss int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			hwm = n
		case "VmRSS:":
			rss = n
		}
	}
	return hwm, rss
}
