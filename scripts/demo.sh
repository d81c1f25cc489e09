#!/usr/bin/env bash
# make demo: a short dgsend -> dgrecv run on loopback with a summary of both
# sides. Two sender threads feed two receiver lanes with YSB ad events.
set -euo pipefail
bin=${BIN:-bin}
port=${DEMO_PORT:-25555}
rate=${DEMO_RATE:-1M}
dur=${DEMO_DURATION:-3s}
out=$(mktemp -d)
trap 'kill $recv 2>/dev/null || true; rm -rf "$out"' EXIT

"$bin/dgrecv" --bind "tcp://127.0.0.1:$port" --lanes 2 --expect-streams 2 --metrics-addr 127.0.0.1:0 \
	--progress never >"$out/recv.txt" 2>"$out/recv.err" &
recv=$!
sleep 0.3
echo "== dgsend: $rate ad events/s for $dur, 2 threads, buckets of 100, to tcp://127.0.0.1:$port..$((port + 1))"
"$bin/dgsend" --connect "tcp://127.0.0.1:$port" --connect "tcp://127.0.0.1:$((port + 1))" --threads 2 \
	--rate "$rate" --duration "$dur" --bucket 100 --idle sleep --metrics-addr 127.0.0.1:0 --progress always
status=0
wait $recv || status=$?
echo
echo "== dgrecv"
cat "$out/recv.txt"
if [ $status -ne 0 ]; then
	echo "dgrecv exited with status $status:" >&2
	cat "$out/recv.err" >&2
	exit $status
fi
