#!/bin/bash
# Footprint of an agent holding 100,000 files of 1 KiB (docs/benchmarks.md,
# "Footprint at 100,000 small files"): for each binary given, alternately,
#   first:   a fresh home, `weft init`, `weft up` until the first scan is
#            logged; VmHWM/VmRSS 10 s later and the live heap
#            (--memprofile, `go tool pprof`) when told to stop;
#   restart: the same home started again; time to the ready line and to
#            the rescan, CPU ticks and VmHWM/VmRSS 5 s after it.
# Loopback only, mDNS off. Build the binaries first, e.g.
#   git worktree add /tmp/wt-old REV && (cd /tmp/wt-old && go build -o /tmp/weft-old ./cmd/weft)
#   go build -o /tmp/weft-new ./cmd/weft
# usage: bench/small_files_footprint.sh ROUNDS BIN...   (results on stdout)
set -u
ROUNDS=$1; shift
unset WEFT_BOOTSTRAP WEFT_HOME
W=/tmp/weft-footprint; mkdir -p $W
if [ ! -d $W/src ]; then
	python3 - $W/src <<'PY'
import os, sys
base = sys.argv[1]
for d in range(100):
    os.makedirs(f'{base}/d{d}', exist_ok=True)
    for i in range(1000):
        with open(f'{base}/d{d}/n{i}.md', 'wb') as f:
            f.write(os.urandom(512).hex().encode())
PY
fi
status() { grep -E 'VmHWM|VmRSS' /proc/$1/status | tr -s ' \t' ' ' | tr '\n' ' '; }
for r in $(seq 1 "$ROUNDS"); do
	for bin in "$@"; do
		tag=$(basename "$bin")-$r; D=$W/$tag
		rm -rf $D; mkdir -p $D; cp -r $W/src $D/folder
		"$bin" --home $D/home init $D/folder > $D/init.log 2>&1
		"$bin" --home $D/home up --mdns=false --quiet --listen /ip4/127.0.0.1/tcp/0 --memprofile $D/heap.pprof > $D/up.log 2>&1 &
		P=$!
		for i in $(seq 1 300); do grep -q "msg=scanned" $D/up.log && break; sleep 0.5; done
		sleep 10
		echo "first   $tag load=$(cut -d' ' -f1 /proc/loadavg) $(status $P)"
		kill -INT $P; wait $P
		go tool pprof -sample_index=inuse_space -top -nodecount=1 "$bin" $D/heap.pprof 2>/dev/null | grep total
		start=$(date +%s.%N)
		"$bin" --home $D/home up --mdns=false --quiet --listen /ip4/127.0.0.1/tcp/0 > $D/up2.log 2>&1 &
		P=$!
		for i in $(seq 1 600); do grep -q "^ready" $D/up2.log && break; sleep 0.05; done
		ready=$(date +%s.%N)
		for i in $(seq 1 300); do grep -q "msg=scanned" $D/up2.log && break; sleep 0.1; done
		scanned=$(date +%s.%N)
		sleep 5
		echo "restart $tag load=$(cut -d' ' -f1 /proc/loadavg) ready=$(echo "$ready - $start" | bc)s scanned=$(echo "$scanned - $start" | bc)s cpu_ticks=$(awk '{print $14+$15}' /proc/$P/stat) $(status $P)"
		kill -INT $P; wait $P
		rm -rf $D
	done
done
