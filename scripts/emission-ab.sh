#!/usr/bin/env bash
# Interleaved A/B of the emission loop: dgsend from two builds (directories
# OLD and NEW holding dgsend), unpaced and paced, into the same draining
# dgrecv (from NEW), N runs each, alternating; prints each run and the
# medians. Usage: scripts/emission-ab.sh OLD_BIN NEW_BIN [N]
#   e.g. git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/oldbin/ ./cmd/dgsend)
#        scripts/emission-ab.sh /tmp/oldbin bin 5
set -euo pipefail
old=$1 new=$2 n=${3:-5}
run() { # bin bucket rate count
	"$new/dgrecv" --bind tcp://127.0.0.1:* --drain --expect-streams 1 --metrics-addr "" --progress never > /dev/null 2> "$tmp/r.err" &
	local rp=$!
	for _ in $(seq 50); do grep -q "listening on" "$tmp/r.err" && break; sleep 0.05; done
	local ep; ep=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/r.err")
	"$1/dgsend" --connect "$ep" --scenario synthetic-100 --bucket "$2" --rate "$3" --count "$4" --duration 0 --metrics-addr "" --json 2>/dev/null |
		python3 -c 'import json,sys; print("%.0f" % json.load(sys.stdin)["achieved_rate_tuples_per_s"])'
	wait "$rp" || true
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for cfg in "1 0 3000000" "100 0 6000000" "1 1000000 2000000" "100 8000000 8000000"; do
	set -- $cfg
	for _ in $(seq "$n"); do
		echo "bucket=$1 rate=$2 old $(run "$old" "$1" "$2" "$3")"
		echo "bucket=$1 rate=$2 new $(run "$new" "$1" "$2" "$3")"
	done
done | tee "$tmp/runs"
python3 - "$tmp/runs" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, r, who, rate = line.split()
    d[(b, r, who)].append(float(rate))
for b, r in sorted({(b, r) for b, r, _ in d}):
    o, n = statistics.median(d[(b, r, "old")]), statistics.median(d[(b, r, "new")])
    print(f"{b} {r}: old {o/1e6:.3f}M  new {n/1e6:.3f}M  new/old {n/o:.3f}")
PY
