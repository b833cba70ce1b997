#!/bin/bash
# Idle footprint of two paired agents after they synced N one-line notes
# (docs/benchmarks.md, "Idle agents: the scrub slice without a sort of the
# index"): `weft init` / `up` for A, `invite` / `join` / `up` for B, N notes
# written into A's folder, a wait until B has the last one and 20 s more,
# then each agent's CPU ticks (10 ms, utime+stime) over IDLE seconds and
# VmRSS at the end. Loopback only, mDNS off. bench/idle_pair.sh measures one
# unpaired agent per build instead.
# With PERF=1, `perf record -g` of A over the idle window instead of ticks
# (report in DIR/report.txt, DIR/children.txt). With STRACE=1, `strace -f
# -c` of A over it instead (system calls counted, not timed: the open and
# stat counts do not depend on the load; DIR/strace.txt). With PERFSTAT=1,
# `perf stat` of A and B over it instead: CPU time in ms and context
# switches (wake-ups) of each. SETTLE is the
# wait after B has the last note (default 20 s). With MEMPROF=1 each agent
# is started with --memprofile (DIR/a.heap, DIR/b.heap, written after a
# collection when the agent is told to stop), and RssAnon / RssFile and
# the Go runtime's accounting (go_memstats_* of the agent's /metrics) are
# printed beside VmRSS (live heap: `go tool pprof -sample_index=inuse_space
# -top DIR/b.heap`).
# usage: bench/idle_synced_pair.sh BIN DIR IDLE_SECONDS N
#   e.g. for i in 1 2 3; do for b in old new; do bench/idle_synced_pair.sh /tmp/weft-$b /tmp/idle-$b 120 10000; done; done
set -e
B=$1; W=$2; IDLE=${3:-60}; N=${4:-200}
PROF_A=(); PROF_B=()
if [ "${MEMPROF:-0}" = 1 ]; then PROF_A=(--memprofile "$W/a.heap"); PROF_B=(--memprofile "$W/b.heap"); fi
unset WEFT_BOOTSTRAP WEFT_HOME
rm -rf "$W"; mkdir -p "$W"
"$B" --home "$W/ha" init "$W/fa" > /dev/null
"$B" --home "$W/ha" up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet "${PROF_A[@]}" > "$W/a.out" 2> "$W/a.err" &
PA=$!
until grep -q '^ready' "$W/a.out" 2>/dev/null; do sleep 0.1; done
code=$("$B" --home "$W/ha" invite | tail -1)
"$B" --home "$W/hb" join "$code" "$W/fb" > /dev/null
"$B" --home "$W/hb" up --listen /ip4/127.0.0.1/tcp/0 --mdns=false --quiet "${PROF_B[@]}" > "$W/b.out" 2> "$W/b.err" &
PB=$!
until grep -q '^ready' "$W/b.out" 2>/dev/null; do sleep 0.1; done
for i in $(seq 1 "$N"); do echo "note $i" > "$W/fa/n$i.md"; done
until [ -e "$W/fb/n$N.md" ]; do sleep 0.2; done
sleep "${SETTLE:-20}"
if [ "${STRACE:-0}" = 1 ]; then
	timeout -s INT "$IDLE" strace -f -c -p $PA -o "$W/strace.txt" > /dev/null 2>&1 || true
	head -30 "$W/strace.txt"
elif [ "${PERFSTAT:-0}" = 1 ]; then
	# CPU time to the microsecond and the context switches (the agent's
	# wake-ups, plus preemptions when the machine is busy), A and B at once.
	perf stat -e task-clock,context-switches -p $PA -o "$W/stat-a.txt" -- sleep "$IDLE" > /dev/null 2>&1 &
	PS=$!
	perf stat -e task-clock,context-switches -p $PB -o "$W/stat-b.txt" -- sleep "$IDLE" > /dev/null 2>&1
	wait $PS
	for x in a b; do
		echo "idle ${IDLE}s $x: $(awk '$2 == "msec" && $3 == "task-clock" {printf "task-clock %s ms", $1} $2 == "context-switches" {printf ", context-switches %s", $1}' "$W/stat-$x.txt")"
	done
elif [ "${PERF:-0}" = 1 ]; then
	perf record -F 499 -g -p $PA -o "$W/perf.data" -- sleep "$IDLE" > /dev/null 2>&1
	perf report -i "$W/perf.data" --no-children --sort symbol --stdio 2>/dev/null | head -100 > "$W/report.txt"
	perf report -i "$W/perf.data" --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^#' | head -80 > "$W/children.txt"
	echo "perf of A over ${IDLE}s: $W/report.txt, $W/children.txt"
else
	ta0=$(awk '{print $14+$15}' /proc/$PA/stat); tb0=$(awk '{print $14+$15}' /proc/$PB/stat)
	sleep "$IDLE"
	ta1=$(awk '{print $14+$15}' /proc/$PA/stat); tb1=$(awk '{print $14+$15}' /proc/$PB/stat)
	ra=$(awk '/VmRSS/ {print $2}' /proc/$PA/status); rb=$(awk '/VmRSS/ {print $2}' /proc/$PB/status)
	echo "idle ${IDLE}s: A $((ta1 - ta0)) ticks, B $((tb1 - tb0)) ticks; RSS A ${ra} kB B ${rb} kB"
	if [ "${MEMPROF:-0}" = 1 ]; then
		for x in A B; do
			p=$PA; [ $x = B ] && p=$PB
			h=$W/ha; [ $x = B ] && h=$W/hb
			echo "$x: $(awk '/^(RssAnon|RssFile)/ {printf "%s %s kB ", $1, $2}' /proc/$p/status)"
			# The Go runtime's own accounting, from the agent's /metrics.
			curl -s -H "Authorization: Bearer $(jq -r .token "$h/api.json")" "http://$(jq -r .addr "$h/api.json")/metrics" |
				awk '/^go_memstats_(heap_alloc|heap_inuse|heap_idle|heap_released|stack_inuse|mspan_inuse|gc_sys|other_sys|sys)_bytes / {printf "%s %.1f MB, ", substr($1, 13), $2 / 1e6} /^go_goroutines / {printf "goroutines %d", $2} END {print ""}'
		done
	fi
fi
kill -TERM $PA $PB; wait $PA $PB || true
