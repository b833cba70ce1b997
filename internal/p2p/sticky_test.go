package p2p

import (
	"errors"
	"maps"
	"net"
	"strings"
	"testing"

	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// fakeNet listens on paper: a port 0 address gets the next port from
// next; busy holds the "ip/transport/port" keys that cannot be listened
// on; an address with noIP6 set fails for every IPv6 address.
type fakeNet struct {
	next   int
	busy   map[string]bool
	noIP6  bool
	addrs  []ma.Multiaddr
	tried  []string
	listen int
}

func (f *fakeNet) Listen(addrs ...ma.Multiaddr) error {
	for _, a := range addrs {
		f.tried = append(f.tried, a.String())
		if _, ip6 := shapeOf(a); ip6 && f.noIP6 {
			return errors.New("address family not supported")
		}
		if p, _ := portOf(a); p == 0 {
			f.next++
			a, _ = withPort(a, f.next)
		}
		if f.busy[a.String()] {
			return errors.New("address already in use")
		}
		f.busy[a.String()] = true
		f.addrs = append(f.addrs, a)
		f.listen++
	}
	return nil
}

func (f *fakeNet) ListenAddresses() []ma.Multiaddr { return f.addrs }

var defaults = []string{
	"/ip4/0.0.0.0/tcp/0",
	"/ip4/0.0.0.0/udp/0/quic-v1",
	"/ip6/::/tcp/0",
	"/ip6/::/udp/0/quic-v1",
}

// TestStickyFirstStart: with nothing recorded, IPv4 gets the system's
// ports and IPv6 takes the IPv4 port of its transport; the record says so.
func TestStickyFirstStart(t *testing.T) {
	f := &fakeNet{next: 40000, busy: map[string]bool{}}
	got, failed, err := ListenSticky(f, defaults, nil, nil)
	if err != nil || len(failed) != 0 {
		t.Fatalf("ListenSticky: %v, failed %v", err, failed)
	}
	want := Ports{defaults[0]: 40001, defaults[1]: 40002, defaults[2]: 40001, defaults[3]: 40002}
	if !maps.Equal(got, want) {
		t.Fatalf("ports %v, want %v", got, want)
	}
	if f.listen != 4 {
		t.Fatalf("%d listeners, want 4", f.listen)
	}
}

// TestStickyRestart: a second start listens on the recorded ports, trying
// nothing else.
func TestStickyRestart(t *testing.T) {
	last := Ports{defaults[0]: 41000, defaults[1]: 41001, defaults[2]: 41000, defaults[3]: 41001}
	f := &fakeNet{next: 50000, busy: map[string]bool{}}
	got, failed, err := ListenSticky(f, defaults, last, nil)
	if err != nil || len(failed) != 0 {
		t.Fatalf("ListenSticky: %v, failed %v", err, failed)
	}
	if !maps.Equal(got, last) {
		t.Fatalf("ports %v, want the recorded %v", got, last)
	}
	wantTried := []string{"/ip4/0.0.0.0/tcp/41000", "/ip4/0.0.0.0/udp/41001/quic-v1", "/ip6/::/tcp/41000", "/ip6/::/udp/41001/quic-v1"}
	if strings.Join(f.tried, " ") != strings.Join(wantTried, " ") {
		t.Fatalf("tried %v, want %v", f.tried, wantTried)
	}
}

// TestStickyPortTaken: a recorded port that is busy (the listen fails, or
// taken says so) gives way to a port the system picks, recorded anew; the
// other addresses keep theirs.
func TestStickyPortTaken(t *testing.T) {
	last := Ports{defaults[0]: 41000, defaults[1]: 41001, defaults[2]: 41000, defaults[3]: 41001}
	for _, tt := range []struct {
		name  string
		busy  map[string]bool
		taken func(ma.Multiaddr) bool
	}{
		{"listen fails", map[string]bool{"/ip4/0.0.0.0/tcp/41000": true}, nil},
		{"taken says so", map[string]bool{}, func(m ma.Multiaddr) bool { return m.String() == "/ip4/0.0.0.0/tcp/41000" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeNet{next: 50000, busy: tt.busy}
			got, failed, err := ListenSticky(f, defaults, last, tt.taken)
			if err != nil || len(failed) != 0 {
				t.Fatalf("ListenSticky: %v, failed %v", err, failed)
			}
			want := maps.Clone(last)
			want[defaults[0]] = 50001
			if !maps.Equal(got, want) {
				t.Fatalf("ports %v, want %v", got, want)
			}
		})
	}
}

// TestStickyNoIPv6: on a host without IPv6 the IPv6 addresses fail (said
// in failed), the IPv4 ones listen, and only they are recorded.
func TestStickyNoIPv6(t *testing.T) {
	f := &fakeNet{next: 40000, busy: map[string]bool{}, noIP6: true}
	got, failed, err := ListenSticky(f, defaults, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) != 2 {
		t.Fatalf("failed %v, want the two IPv6 addresses", failed)
	}
	if want := (Ports{defaults[0]: 40001, defaults[1]: 40002}); !maps.Equal(got, want) {
		t.Fatalf("ports %v, want %v", got, want)
	}
}

// TestStickyOwnPort: an address with a port of its own is listened on as
// configured and not recorded; one that cannot be is reported; nothing
// listening at all is an error, as is an address that does not parse.
func TestStickyOwnPort(t *testing.T) {
	f := &fakeNet{next: 40000, busy: map[string]bool{}}
	got, failed, err := ListenSticky(f, []string{"/ip4/127.0.0.1/tcp/4001"}, Ports{"/ip4/127.0.0.1/tcp/4001": 5}, nil)
	if err != nil || len(failed) != 0 || len(got) != 0 || f.tried[0] != "/ip4/127.0.0.1/tcp/4001" {
		t.Fatalf("got %v failed %v err %v tried %v", got, failed, err, f.tried)
	}
	if _, _, err := ListenSticky(f, []string{"/ip4/127.0.0.1/tcp/4001"}, nil, nil); err == nil {
		t.Fatal("a configured port in use and nothing else: no error")
	}
	if _, _, err := ListenSticky(f, []string{"/ip4/not-an-ip/tcp/0"}, nil, nil); err == nil {
		t.Fatal("an address that does not parse: no error")
	}
}

// TestTCPPortTaken: a port a listener holds is taken, a closed one is not.
func TestTCPPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := manet.FromNetAddr(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if !TCPPortTaken(m) {
		t.Fatalf("%s held by a listener: not taken", m)
	}
	l.Close()
	if TCPPortTaken(m) {
		t.Fatalf("%s after the listener closed: taken", m)
	}
	if TCPPortTaken(ma.StringCast("/ip4/127.0.0.1/udp/1/quic-v1")) {
		t.Fatal("a UDP address: taken, want false (only TCP is checked)")
	}
}
