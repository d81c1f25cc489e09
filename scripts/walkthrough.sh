#!/usr/bin/env bash
# The README's two-host path, walked with network namespaces as the hosts
# (docs/walkthrough.md records one walk). As root, from a clean clone:
#   scripts/walkthrough.sh OUTDIR
# Hosts: "recvhost" 10.77.0.2 and "sendhost" 10.77.0.3 on a bridge; the
# controller runs in the root namespace at 10.77.0.1. Every command and
# its output goes to OUTDIR/walk.log; the report's screenshots to OUTDIR.
set -euo pipefail
out=$(realpath "${1:?usage: scripts/walkthrough.sh OUTDIR}")
mkdir -p "$out"
cd "$(dirname "$0")/.."
log="$out/walk.log"
: > "$log"
say() { printf '\n$ %s\n' "$*" | tee -a "$log"; }
run() { say "$@"; "$@" 2>&1 | tee -a "$log"; }

cleanup() {
	for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	ip netns del recvhost 2>/dev/null || true
	ip netns del sendhost 2>/dev/null || true
	ip link del cpwalk0 2>/dev/null || true
}
trap cleanup EXIT
cleanup

# Two "machines": namespaces on a bridge, the controller on the host.
ip link add cpwalk0 type bridge && ip addr add 10.77.0.1/24 dev cpwalk0 && ip link set cpwalk0 up
i=2
for h in recvhost sendhost; do
	ip netns add $h
	ip link add ${h:0:4}v type veth peer name ${h:0:4}p
	ip link set ${h:0:4}v netns $h
	ip link set ${h:0:4}p master cpwalk0 up
	ip -n $h addr add 10.77.0.$i/24 dev ${h:0:4}v
	ip -n $h link set ${h:0:4}v up
	ip -n $h link set lo up
	i=$((i + 1))
done

run make build
say 'head -c 32 /dev/urandom | base64 > ~/.cp-token'
token="$out/cp-token"   # the walk keeps its token in OUTDIR, not in ~
head -c 32 /dev/urandom | base64 > "$token"

# The README's agent commands, each on its host.
say "ip netns exec recvhost bin/dgrecv --agent --bind tcp://*:5555 --lanes 2 --metrics-addr 0.0.0.0:9102 --token-file ~/.cp-token &"
ip netns exec recvhost bin/dgrecv --agent --bind 'tcp://*:5555' --lanes 2 --metrics-addr 0.0.0.0:9102 --token-file "$token" 2>&1 | tee -a "$log" &
say "ip netns exec sendhost bin/dgsend --agent --metrics-addr 0.0.0.0:9101 --token-file ~/.cp-token &"
ip netns exec sendhost bin/dgsend --agent --metrics-addr 0.0.0.0:9101 --token-file "$token" 2>&1 | tee -a "$log" &
sleep 2

# A controller without the token is told what to do.
say "bin/cpsweep --sender 10.77.0.3:9101 --receiver 10.77.0.2:9102 --duration 2s"
bin/cpsweep --sender 10.77.0.3:9101 --receiver 10.77.0.2:9102 --duration 2s --results "$out/runs" 2>&1 | tee -a "$log" || echo "(exit status $?)" | tee -a "$log"

# The sweep, with the clock relation and the profiled trial.
say "bin/cpsweep --sender 10.77.0.3:9101 --receiver 10.77.0.2:9102 --token-file ~/.cp-token --threads 2 --bucket 100 --duration 3s --warmup 1s --clock --profile profiles/default.yaml --name walk"
bin/cpsweep --sender 10.77.0.3:9101 --receiver 10.77.0.2:9102 --token-file "$token" --threads 2 --bucket 100 --duration 3s --warmup 1s \
	--clock --profile profiles/default.yaml --name walk --results "$out/runs" 2>&1 | tee -a "$log"
dir=$(ls -d "$out"/runs/*-walk | head -1)
say "bin/cpsweep analyze runs/*-walk"
bin/cpsweep analyze "$dir" 2>&1 | tee -a "$log"
say "bin/cpsweep report runs/*-walk"
bin/cpsweep report "$dir" 2>&1 | tee -a "$log"

# Screenshots of the report, and its own check, in headless Chromium.
for part in 0 1; do
	h=$((1500 * (part + 1)))
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/chromium" \
		--window-size=1100,$h --screenshot="$out/report-$part.png" "file://$dir/report.html" >/dev/null 2>&1 || true
done
chromium --headless --no-sandbox --disable-gpu --user-data-dir="$out/chromium" --virtual-time-budget=5000 --dump-dom "file://$dir/report.html" 2>/dev/null |
	grep -o '<body[^>]*>' | tee -a "$log"
echo "run directory: $dir" | tee -a "$log"
