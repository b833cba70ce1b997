#!/bin/bash
# Idle system calls of agent A of two paired agents after they synced N
# one-line notes (docs/benchmarks.md, "Idle agents: the folder guard at
# 10 s"): the setup of bench/idle_synced_pair.sh, a wait until B has the
# last note and 15 s more, then `strace -f -c` of A over SECONDS. System
# calls are counted, not timed: the open and stat counts do not depend on
# the load. Loopback only, mDNS off.
# usage: bench/idle_syscalls.sh BIN DIR SECONDS N
set -e
B=$1; W=$2; IDLE=${3:-30}; N=${4:-200}
unset WEFT_BOOTSTRAP WEFT_HOME
rm -rf "$W"; mkdir -p "$W"
"$B" --home "$W/ha" init "$W/fa" > /dev/null
"$B" --home "$W/ha" up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet > "$W/a.out" 2> "$W/a.err" &
PA=$!
until grep -q '^ready' "$W/a.out" 2>/dev/null; do sleep 0.1; done
code=$("$B" --home "$W/ha" invite | tail -1)
"$B" --home "$W/hb" join "$code" "$W/fb" > /dev/null
"$B" --home "$W/hb" up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet > "$W/b.out" 2> "$W/b.err" &
PB=$!
until grep -q '^ready' "$W/b.out" 2>/dev/null; do sleep 0.1; done
for i in $(seq 1 "$N"); do echo "note $i" > "$W/fa/n$i.md"; done
until [ -e "$W/fb/n$N.md" ]; do sleep 0.2; done
sleep 15
timeout -s INT "$IDLE" strace -f -c -p $PA -o "$W/strace.txt" > /dev/null 2>&1 || true
kill $PA $PB; wait 2>/dev/null || true
head -30 "$W/strace.txt"
