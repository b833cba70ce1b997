#!/bin/bash
# Idle agent, B7 style: two builds' agents at once, fresh homes, loopback
# only, mDNS off; CPU (utime+stime) over t = 20-170 s and VmRSS at 170 s.
# Build the two binaries first, e.g.
#   git worktree add /tmp/wt-old 267fc42 && (cd /tmp/wt-old && go build -o /tmp/weft-old ./cmd/weft)
#   go build -o /tmp/weft-new ./cmd/weft
# usage: bench/idle_pair.sh RUN   -> writes /tmp/idle-results/run-RUN.txt
# (docs/benchmarks.md, "Idle agent with local versions"; three runs: for i in 1 2 3; do bench/idle_pair.sh $i; done)
set -u
RUN=$1
R=/tmp/idle-results; mkdir -p $R; OUT=$R/run-$RUN.txt; : > $OUT
unset WEFT_BOOTSTRAP WEFT_HOME
log() { echo "$*" | tee -a $OUT; }

# one data set per run, copied into each build's folder
SRC=/tmp/idle-src-$RUN
rm -rf $SRC; mkdir -p $SRC
python3 - "$SRC" <<'PY'
import os, random, string, sys
src = sys.argv[1]
pr = string.printable[:95]          # printable ASCII (letters, digits, punctuation, space)
for d in range(20):
    p = os.path.join(src, f"dir{d:02d}"); os.makedirs(p)
    for i in range(100):             # 20 x 100 = 2,000 notes of 2 KiB
        with open(os.path.join(p, f"note{i:03d}.txt"), "w") as f:
            f.write("".join(random.choices(pr, k=2048)))
big = os.path.join(src, "big"); os.makedirs(big)
for i in range(20):                  # 20 files of 300 KiB random bytes
    with open(os.path.join(big, f"blob{i:02d}.bin"), "wb") as f:
        f.write(os.urandom(300 * 1024))
PY

declare -A PID
for b in old new; do
  D=/tmp/idle-$b-$RUN
  rm -rf $D; mkdir -p $D; cp -r $SRC $D/folder
  WEFT_HOME=$D/home /tmp/weft-$b init $D/folder > $D/init.out 2>&1 || { log "init $b failed"; exit 1; }
done
log "files: $(find $SRC -type f | wc -l), bytes: $(du -sb $SRC | cut -f1)"

T0=$(date +%s)
for b in old new; do
  D=/tmp/idle-$b-$RUN
  WEFT_HOME=$D/home /tmp/weft-$b up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet > $D/up.out 2>&1 < /dev/null &
  PID[$b]=$!
done
log "start $(date -u +%FT%TZ) old pid ${PID[old]} new pid ${PID[new]}"

cpu() { awk '{print $14+$15}' /proc/$1/stat; }   # utime+stime, clock ticks (CLK_TCK=100)
rss() { awk '/^VmRSS/{print $2}' /proc/$1/status; } # KiB

sleep $(( T0 + 20 - $(date +%s) ))
declare -A C1 C2
for b in old new; do C1[$b]=$(cpu ${PID[$b]}); done
log "t=20 $(date -u +%FT%TZ) cpu old ${C1[old]} new ${C1[new]} ticks; loadavg $(cat /proc/loadavg)"
for k in 1 2 3 4; do   # load samples during the window
  sleep $(( T0 + 20 + k*30 - $(date +%s) ))
  log "t=$((20+k*30)) loadavg $(cat /proc/loadavg)"
done
sleep $(( T0 + 170 - $(date +%s) ))
for b in old new; do C2[$b]=$(cpu ${PID[$b]}); done
log "t=170 $(date -u +%FT%TZ) cpu old ${C2[old]} new ${C2[new]} ticks; loadavg $(cat /proc/loadavg)"
for b in old new; do
  R_KB=$(rss ${PID[$b]})
  d=$(( C2[$b] - C1[$b] ))
  log "$b: cpu ticks over 150 s = $d -> $(awk -v d=$d 'BEGIN{printf "%.4f", d/100/150*60}') CPU s/min; VmRSS $R_KB KiB = $(awk -v r=$R_KB 'BEGIN{printf "%.1f", r/1024}') MiB"
done
# after the window: what the new build's version store holds
log "--- weft-new folder versions --json"
WEFT_HOME=/tmp/idle-new-$RUN/home /tmp/weft-new folder versions --json 2>&1 | tee -a $OUT
log "--- du -sb new HOME/vaults/*/versions"
du -sb /tmp/idle-new-$RUN/home/vaults/*/versions | tee -a $OUT
for b in old new; do grep -c . /tmp/idle-$b-$RUN/up.out | sed "s/^/$b up.out lines: /" | tee -a $OUT; grep -i -m3 'level=\(WARN\|ERROR\)' /tmp/idle-$b-$RUN/up.out | tee -a $OUT; done
for b in old new; do kill -TERM ${PID[$b]}; done
for b in old new; do wait ${PID[$b]}; log "$b exit $?"; done
log "end $(date -u +%FT%TZ)"
cp /tmp/idle-old-$RUN/up.out $R/up-old-$RUN.out; cp /tmp/idle-new-$RUN/up.out $R/up-new-$RUN.out
rm -rf /tmp/idle-old-$RUN /tmp/idle-new-$RUN $SRC
