#!/usr/bin/env bash
# make demo-ysb: a sweep of the Yahoo Streaming Benchmark on the Benthos
# engine between two JetStream subjects, on loopback (docs/sut.md):
#   local senders -> ysb.in -> cpjob ysb (filter, projection, Redis join,
#   windows of 1 s) -> ysb.out -> local receiver (--schema window)
# It starts nats-server (JetStream) and redis-server on free ports, the job
# (serving its operators' accounting to the sweep, as an agent does), then
# cpsweep --input/--output --job-agent, which finds the highest rate at
# which the job's windows stay exact and its lag on its input does not
# grow, names the limiting operator, profiles a trial at 90% of the answer with the
# agents' clocks related, and writes the report; cpsweep analyze then
# joins the profiled trial's records across the processes. Everything is
# stopped at the end (~2.5 min).
#
# The join is given DEMO_JOIN_WORK of CPU a view (default 100us: about 10 k
# views/s, 30 k ad events/s), a known limit for the analyses to find and
# agree on. Without it (DEMO_JOIN_WORK=0) YSB on one 2-vCPU host shares the
# CPUs with the harness, the broker and Redis, and the host is the limit
# (55 k events/s here, noisy: docs/sut.md).
#
# DEMO_JOB_ARGS adds flags to cpjob (e.g. "--filter-work 40us": a limit of
# another shape, docs/sut.md), DEMO_JOB_ENV sets its environment (e.g.
# "GOGC=5"), and DEMO_SWEEP_ARGS adds flags to cpsweep.
set -euo pipefail
bin=${BIN:-bin}
start=${DEMO_START:-20k}
join_work=${DEMO_JOIN_WORK:-100us}
for tool in nats-server redis-server; do
	command -v "$tool" >/dev/null || { echo "make demo-ysb needs $tool: apt-get install -y $tool (or make test, which installs both)"; exit 1; }
done
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$out"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
nport=$(free_port) rport=$(free_port) aport=$(free_port)
nats-server -a 127.0.0.1 -p "$nport" -js -sd "$out/js" >"$out/nats.log" 2>&1 & pids+=($!)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$out/redis.log" 2>&1 & pids+=($!)
for _ in $(seq 50); do
	(exec 3<>"/dev/tcp/127.0.0.1/$nport" && exec 3<>"/dev/tcp/127.0.0.1/$rport") 2>/dev/null && break
	sleep 0.1
done
in="jetstream://127.0.0.1:$nport/ysb.in" outp="jetstream://127.0.0.1:$nport/ysb.out"
env ${DEMO_JOB_ENV:-} "$bin/cpjob" ysb --input "$in?group=ysb" --output "$outp" --redis "127.0.0.1:$rport" --window 1s --lateness 500ms \
	--join-work "$join_work" --agent-addr "127.0.0.1:$aport" ${DEMO_JOB_ARGS:-} >"$out/job.log" 2>&1 & job=$!; pids+=($job)
until grep -q "cpjob ysb: reading" "$out/job.log"; do kill -0 $job 2>/dev/null || { cat "$out/job.log"; exit 1; }; sleep 0.1; done
echo "== cpsweep: YSB between $in and $outp, from $start ad events/s; each trial owes the views it sent, counted in each campaign's window"
[ "$join_work" = 0 ] || echo "   (the join spends $join_work of CPU on each view: a known limit for the analyses to find; DEMO_JOIN_WORK=0 runs YSB as it is)"
status=0
# the plan holds the sweep's settings; the flags beside it give this
# run's addresses (free ports), which win over the plan's
"$bin/cpsweep" --plan examples/plans/ysb.yaml --yes --input "$in?group=ysb" --output "$outp" --job-agent "127.0.0.1:$aport" \
	--start "$start" --name demo-ysb ${DEMO_SWEEP_ARGS:-} || status=$?
dir=$(ls -td runs/*-demo-ysb 2>/dev/null | head -1)
if [ -n "$dir" ]; then
	if [ -d "$dir/profiles" ]; then
		echo "== cpsweep analyze --pag: the profiled trial's records joined across the processes by the clocks' relation"
		"$bin/cpsweep" analyze --pag "$dir" | tail -n 15 || status=$?
	fi
	"$bin/cpsweep" report "$dir" && echo "open $dir/report.html"
fi
exit $status
