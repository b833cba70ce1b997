#!/bin/bash
# B3 over a link with a round trip time (docs/benchmarks.md, "B3 over a
# 20 ms round trip"): one random file of MB MiB from A to B, two agents in
# two network namespaces this script creates (wd-a, wd-b, joined by a veth
# pair), with every byte from B to A and back delayed by DELAY_MS in each
# direction by bench/delayproxy (the kernel's netem may be missing). A
# listens only on 10.99.0.1:4001 (its own address); B reaches it only
# through the proxy (a DNAT rule in wd-b sends 10.99.0.1:4001 to the
# proxy, which runs in wd-a), and B listens on its own loopback, so the
# one connection between them is delayed. Prints the time from the rename
# into A's folder to B's copy being whole. Needs root, ip and iptables.
# With EVENTS=1, B's event stream is kept in DIR/b.ev.
# usage: bench/b3_delay.sh BIN PROXY DIR MB DELAY_MS
#   e.g. go build -o /tmp/delayproxy ./bench/delayproxy
#        for i in 1 2 3; do for b in old new; do bench/b3_delay.sh /tmp/weft-$b /tmp/delayproxy /tmp/b3d 256 10; done; done
set -e
B=$1; P=$2; W=$3; MB=${4:-256}; D=${5:-10}
unset WEFT_BOOTSTRAP WEFT_HOME
cleanup() {
	kill -TERM $PA $PB $PP 2>/dev/null || true
	wait 2>/dev/null || true
	ip netns del wd-a 2>/dev/null || true
	ip netns del wd-b 2>/dev/null || true
}
trap cleanup EXIT
ip netns del wd-a 2>/dev/null || true
ip netns del wd-b 2>/dev/null || true
ip netns add wd-a; ip netns add wd-b
ip -n wd-a link add veth0 type veth peer name veth0 netns wd-b
ip -n wd-a addr add 10.77.0.1/24 dev veth0; ip -n wd-a link set veth0 up; ip -n wd-a link set lo up
ip -n wd-b addr add 10.77.0.2/24 dev veth0; ip -n wd-b link set veth0 up; ip -n wd-b link set lo up
ip -n wd-a addr add 10.99.0.1/32 dev lo
ip -n wd-b route add 10.99.0.0/24 via 10.77.0.1
ip netns exec wd-b iptables -t nat -A OUTPUT -d 10.99.0.1 -p tcp --dport 4001 -j DNAT --to-destination 10.77.0.1:5001
ip netns exec wd-a "$P" -listen 10.77.0.1:5001 -to 10.99.0.1:4001 -delay "${D}ms" 2> "$W.proxy.err" &
PP=$!
rm -rf "$W"; mkdir -p "$W"
"$B" --home "$W/ha" init "$W/fa" > /dev/null
ip netns exec wd-a "$B" --home "$W/ha" up --listen /ip4/10.99.0.1/tcp/4001 --fresh-ports --mdns=false --quiet > "$W/a.out" 2> "$W/a.err" &
PA=$!
until grep -q '^ready' "$W/a.out" 2>/dev/null; do sleep 0.1; done
code=$(ip netns exec wd-a "$B" --home "$W/ha" invite | tail -1)
ip netns exec wd-b "$B" --home "$W/hb" join "$code" "$W/fb" > /dev/null
ip netns exec wd-b "$B" --home "$W/hb" up --listen /ip4/127.0.0.1/tcp/0 --fresh-ports --mdns=false --quiet > "$W/b.out" 2> "$W/b.err" &
PB=$!
until grep -q '^ready' "$W/b.out" 2>/dev/null; do sleep 0.1; done
head -c $((MB << 20)) /dev/urandom > "$W/big.tmp"
until ip netns exec wd-b "$B" --home "$W/hb" status --json 2>/dev/null | grep -q '"in_sync": *true'; do sleep 0.2; done
if [ "${EVENTS:-0}" = 1 ]; then
	ip netns exec wd-b "$B" --home "$W/hb" events --json > "$W/b.ev" 2>&1 &
	sleep 0.5
fi
ca0=$(awk '{print $14+$15}' /proc/$PA/stat); cb0=$(awk '{print $14+$15}' /proc/$PB/stat)
t0=$(date +%s.%N)
mv "$W/big.tmp" "$W/fa/big.bin"
until [ "$(stat -c %s "$W/fb/big.bin" 2>/dev/null)" = $((MB << 20)) ]; do sleep 0.02; done
t1=$(date +%s.%N)
ca1=$(awk '{print $14+$15}' /proc/$PA/stat); cb1=$(awk '{print $14+$15}' /proc/$PB/stat)
cmp -s "$W/fa/big.bin" "$W/fb/big.bin" || { echo "B's copy differs"; exit 1; }
echo "B3 ${MB} MiB at ${D} ms each way: $(echo "$t1 - $t0" | bc) s, $(echo "scale=1; $MB / ($t1 - $t0)" | bc) MiB/s; CPU A $(((ca1 - ca0)))0 ms, B $(((cb1 - cb0)))0 ms; load $(cut -d' ' -f1 /proc/loadavg)"
