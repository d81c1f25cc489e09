#!/usr/bin/env bash
# Where the emission thread's time goes, per message: dgsend sends COUNT
# synthetic-100 tuples unpaced (buckets of BUCKET) into the plain C
# receiver under `perf record`, and the busiest dgsend thread's samples are
# split into parts, each given in ns per message (its share of samples
# times the thread's CPU per message that dgsend itself reports).
# Usage: scripts/emission-perf.sh BIN BUCKET COUNT [dgsend flags...]
#   e.g. scripts/emission-perf.sh bin 1 2000000 --cpus none --send-batch 1
# Needs perf (Debian linux-perf) and bin/cref-recv (make cref).
set -euo pipefail
bin=$1 bucket=$2 count=$3; shift 3
size=$((24 + 100 * bucket))
msgs=$((count / bucket))
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin/cref-recv" 'tcp://127.0.0.1:*' "$size" "$msgs" 2000 > "$tmp/recv.json" 2> "$tmp/recv.err" &
rp=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/recv.err" && break; sleep 0.05; done
ep=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/recv.err")
perf record -q -F 10000 -o "$tmp/perf.data" -- "$bin/dgsend" --connect "$ep" --scenario synthetic-100 --bucket "$bucket" \
	--rate 0 --count "$count" --duration 0 --json --metrics-addr "" --progress never "$@" > "$tmp/send.json" 2> /dev/null
wait "$rp"
perthread=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["emission_cpu_ns_per_bucket"])' "$tmp/send.json")
tid=$(perf script -i "$tmp/perf.data" -F comm,tid -G 2>/dev/null | awk '$1=="dgsend"{c[$2]++} END{m=0; for(k in c) if(c[k]>m){m=c[k]; t=k}; print t}')
perf script -i "$tmp/perf.data" --tid "$tid" -F ip,sym,dso -G 2>/dev/null | awk -v ns="$perthread" '
NF {
	dso = $NF; sym = $2
	if (dso ~ /kernel/) part = "kernel (wake-ups, switches, faults)"
	else if (dso ~ /libzmq/) part = "libzmq"
	else if (dso ~ /libc/) part = "libc (malloc, memcpy)"
	else if (sym ~ /cp_send_batch|cp_send$/) part = "C shim (loop, TSC reads)"
	else if (sym ~ /cgo|syscall|^runtime\.(save|getcallerfp|asmcgocall)/) part = "cgo transition"
	else if (sym ~ /Template\)\.Patch|prepare/) part = "patching ids and times"
	else part = "our loop (accounting, counters, clock)"
	n[part]++; total++
}
END {
	printf "%-40s %8s %8s\n", "part", "share", "ns/msg"
	for (p in n) printf "%-40s %7.1f%% %8.0f\n", p, 100 * n[p] / total, ns * n[p] / total | "sort -k1"
	close("sort -k1")
	printf "%-40s %8s %8.0f\n", "total (the thread'"'"'s CPU per message)", "", ns
}'
