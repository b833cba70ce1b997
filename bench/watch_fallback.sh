#!/bin/bash
# Cost of the watcher's fallback (node/watchfallback.go): one build, two
# idle agents at once on copies of one folder of 100,000 files of 1 KiB in
# 1,000 directories, fresh homes, loopback only, mDNS off: "watched" as
# usual, and "fallback" in a user namespace of its own whose inotify watch
# limit is 0, so nothing is watched and the whole folder is rescanned every
# max(10 s, 20 x the last rescan's time). Once both have finished their
# first scan, CPU (utime+stime) over 120 s, as seconds per minute.
# usage: go build -o /tmp/weft-bench ./cmd/weft && bench/watch_fallback.sh RUN
#   -> /tmp/fallback-results/run-RUN.txt
# (docs/benchmarks.md, "Watcher fallback"; three runs: for i in 1 2 3; do bench/watch_fallback.sh $i; done)
set -u
RUN=$1
BIN=${WEFT_BIN:-/tmp/weft-bench}
R=/tmp/fallback-results; mkdir -p $R; OUT=$R/run-$RUN.txt; : > $OUT
unset WEFT_BOOTSTRAP WEFT_HOME
log() { echo "$*" | tee -a $OUT; }

SRC=/tmp/fallback-src
if [ ! -d $SRC ]; then
  mkdir -p $SRC
  python3 - "$SRC" <<'PY'
import os, sys
src = sys.argv[1]
for d in range(1000):
    p = os.path.join(src, f"d{d:03d}"); os.makedirs(p)
    for i in range(100):
        with open(os.path.join(p, f"n{i:02d}.txt"), "wb") as f:
            f.write(os.urandom(512).hex().encode())  # 1 KiB
PY
fi
log "files: $(find $SRC -type f | wc -l), dirs: $(find $SRC -type d | wc -l)"

declare -A PID
for m in watched fallback; do
  D=/tmp/fallback-$m
  rm -rf $D; mkdir -p $D; cp -r $SRC $D/folder
  WEFT_HOME=$D/home $BIN init $D/folder > $D/init.out 2>&1 || { log "init $m failed"; exit 1; }
done
D=/tmp/fallback-watched
WEFT_HOME=$D/home $BIN up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet > $D/up.out 2>&1 < /dev/null &
PID[watched]=$!
D=/tmp/fallback-fallback
unshare --user --map-root-user sh -c 'echo 0 > /proc/sys/user/max_inotify_watches && exec "$@"' sh \
  env WEFT_HOME=$D/home $BIN up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet > $D/up.out 2>&1 < /dev/null &
PID[fallback]=$!
log "start $(date -u +%FT%TZ) pids watched ${PID[watched]} fallback ${PID[fallback]}"

state() { WEFT_HOME=/tmp/fallback-$1/home $BIN status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["folders"][0]["state"])' 2>/dev/null; }
for m in watched fallback; do
  for i in $(seq 1 600); do
    s=$(state $m); case "$s" in in-sync|out-of-sync|offline) break;; esac; sleep 1
  done
  log "$m: first scan done ($s) at $(date -u +%FT%TZ)"
done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }   # clock ticks (CLK_TCK=100)
declare -A C1 C2
for m in watched fallback; do C1[$m]=$(cpu ${PID[$m]}); done
log "window start $(date -u +%FT%TZ) loadavg $(cat /proc/loadavg)"
sleep 60; log "t=60 loadavg $(cat /proc/loadavg)"
sleep 60
for m in watched fallback; do C2[$m]=$(cpu ${PID[$m]}); done
log "window end $(date -u +%FT%TZ) loadavg $(cat /proc/loadavg)"
for m in watched fallback; do
  log "$m: $(( C2[$m] - C1[$m] )) ticks in 120 s = $(awk -v t=$(( C2[$m] - C1[$m] )) 'BEGIN{printf "%.2f", t/100/2}') CPU s per minute"
done
kill ${PID[watched]} ${PID[fallback]}; wait
