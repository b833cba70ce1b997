#!/bin/bash
# Weight and time of the web UI's pages (docs/benchmarks.md, "The web UI's
# pages"): an agent holding 100,000 files of 1 KiB (the folder of
# bench/small_files_footprint.sh, made here when missing), logged in through
# `weft ui --print-url`; each page fetched ROUNDS times with curl, printing
# bytes and the median time. Loopback only, mDNS off.
# usage: bench/ui_pages.sh BIN ROUNDS
set -eu
BIN=$1; ROUNDS=${2:-5}
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
D=$W/ui; rm -rf $D; mkdir -p $D; cp -r $W/src $D/folder
"$BIN" --home $D/home init $D/folder > $D/init.log 2>&1
"$BIN" --home $D/home up --mdns=false --quiet --listen /ip4/127.0.0.1/tcp/0 > $D/up.log 2>&1 &
P=$!
trap 'kill -INT $P; wait $P' EXIT
for i in $(seq 1 300); do grep -q "msg=scanned" $D/up.log && break; sleep 0.5; done
link=$("$BIN" --home $D/home ui --print-url)
base=${link%%/ui/*}
curl -s -c $D/jar -o /dev/null "$link"
echo "load=$(cut -d' ' -f1 /proc/loadavg) files=100000"
for page in / /devices /conflicts /activity /relays /pairing "/history?path=$D/folder/d1/n1.md"; do
	times=()
	for r in $(seq 1 "$ROUNDS"); do
		out=$(curl -s -b $D/jar -o /dev/null -w '%{size_download} %{time_total}' "$base/ui$page")
		size=${out% *}; times+=("${out#* }")
	done
	med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (ROUNDS + 1) / 2 ))p")
	echo "page=/ui${page%%\?*} bytes=$size median_s=$med"
done
