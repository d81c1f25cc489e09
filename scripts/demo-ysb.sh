#!/usr/bin/env bash
# make demo-ysb: the Yahoo Streaming Benchmark on the Benthos engine between
# two JetStream subjects, on loopback, at one fixed rate (docs/sut.md):
#   dgsend -> ysb.in -> cpjob ysb (filter, projection, Redis join, windows)
#          -> ysb.out -> dgrecv --schema window
# It starts nats-server (JetStream) and redis-server on free ports and stops
# everything at the end. Not a sweep yet: it says whether the job kept up
# at this rate, and YSB's window latency.
set -euo pipefail
bin=${BIN:-bin}
rate=${DEMO_RATE:-20k}
dur=${DEMO_DURATION:-5s}
for tool in nats-server redis-server; do
	command -v "$tool" >/dev/null || { echo "make demo-ysb needs $tool: apt-get install -y $tool (or make test, which installs both)"; exit 1; }
done
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$out"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
nport=$(free_port) rport=$(free_port)
nats-server -a 127.0.0.1 -p "$nport" -js -sd "$out/js" >"$out/nats.log" 2>&1 & pids+=($!)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$out/redis.log" 2>&1 & pids+=($!)
for _ in $(seq 50); do
	(exec 3<>"/dev/tcp/127.0.0.1/$nport" && exec 3<>"/dev/tcp/127.0.0.1/$rport") 2>/dev/null && break
	sleep 0.1
done
in="jetstream://127.0.0.1:$nport/ysb.in" outp="jetstream://127.0.0.1:$nport/ysb.out"
"$bin/cpjob" ysb --input "$in?group=ysb" --output "$outp" --redis "127.0.0.1:$rport" --window 1s --lateness 500ms 2>"$out/job.log" & job=$!; pids+=($job)
until grep -q "cpjob ysb: reading" "$out/job.log"; do kill -0 $job 2>/dev/null || { cat "$out/job.log"; exit 1; }; sleep 0.1; done
"$bin/dgrecv" --connect "$outp?group=cp" --schema window --end-timeout 60s --progress never >"$out/recv.txt" 2>"$out/recv.err" & recv=$!; pids+=($recv)
echo "== dgsend: $rate ad events/s for $dur into $in; cpjob ysb counts views per campaign in windows of 1 s"
"$bin/dgsend" --connect "$in" --rate "$rate" --duration "$dur" --bucket 100 --late-threshold 1ms --metrics-addr 127.0.0.1:0 --progress always || true
echo "== waiting for the last windows (a window and a lateness after the last event), then stopping the job"
sleep 3
kill -TERM $job && wait $job || true
status=0
wait $recv || status=$?
echo
echo "== dgrecv: the job's windows (latency is YSB's: from a window's latest event to its arrival)"
cat "$out/recv.txt"
if [ $status -ne 0 ]; then
	echo "dgrecv exited with status $status:" >&2
	cat "$out/recv.err" "$out/job.log" >&2
	exit $status
fi
