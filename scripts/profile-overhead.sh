#!/usr/bin/env bash
# Interleaved unpaced runs with and without a profile: dgsend --rate 0
# --count 5000000 --bucket 100 into a decoding dgrecv, both with the same
# handlers on every channel, N pairs; prints each consume rate (dgrecv's
# JSON) and the medians. A quick check; the figure at the maximum
# sustainable rate is TestBenchProfilerOverhead (make bench).
# Usage: scripts/profile-overhead.sh BIN HANDLERS.yaml [N]
#   e.g. scripts/profile-overhead.sh bin profiles/default.yaml 9
set -euo pipefail
bin=$1 prof=$2 n=${3:-5}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() { # extra flags for both sides
	"$bin/dgrecv" --bind 'tcp://127.0.0.1:*' --schema synthetic --expect-streams 1 --json --metrics-addr "" --progress never "$@" > "$tmp/r.json" 2> "$tmp/r.err" &
	local rp=$!
	for _ in $(seq 100); do grep -q "listening on" "$tmp/r.err" && break; sleep 0.05; done
	local ep; ep=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/r.err")
	"$bin/dgsend" --connect "$ep" --scenario synthetic-100 --bucket 100 --rate 0 --count 5000000 --duration 0 --metrics-addr "" "$@" > /dev/null 2>&1
	wait "$rp"
	python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["consume_rate_tuples_per_s"])' "$tmp/r.json"
}
for _ in $(seq "$n"); do
	echo "off $(run)"
	rm -rf "$tmp/logs"
	echo "profiled $(run --profile "$prof" --profile-dir "$tmp/logs")"
done | tee "$tmp/runs"
python3 - "$tmp/runs" <<'PY'
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    who, rate = line.split()
    d.setdefault(who, []).append(float(rate))
off, on = statistics.median(d["off"]), statistics.median(d["profiled"])
print(f"off {off/1e6:.3f}M  profiled {on/1e6:.3f}M  cost {100*(1-on/off):.1f}%")
PY
