#!/usr/bin/env bash
# Where the profiler's cost goes, from CPU samples rather than from
# throughput (which this kind of host moves by ±15% between runs): dgsend
# sends COUNT synthetic-100 tuples unpaced in buckets of 100 into a
# decoding dgrecv, both with the handlers of HANDLERS.yaml on every
# channel, under `perf record -a`. Every sample of the two processes (all
# their threads: libzmq's I/O threads and the compression workers too) is
# put in one part, and each part's share of the two processes' samples is
# printed. The profiler's share is what it takes from a run whose two
# cores are saturated, i.e. at the maximum sustainable rate.
# Usage: scripts/profile-perf.sh BIN HANDLERS.yaml [COUNT]
#   e.g. scripts/profile-perf.sh bin profiles/default.yaml 20000000
set -euo pipefail
bin=$1 prof=$2 count=${3:-20000000}
tmp=$(mktemp -d)
perf record -q -a -g -F 4000 -o "$tmp/perf.data" -- sleep 3600 2> /dev/null &
pp=$!
# The recorder must not outlive a failed run.
trap 'st=$?; kill -INT "$pp" 2> /dev/null; wait "$pp" 2> /dev/null; [ -n "${KEEP:-}" ] && cp "$tmp/perf.data" "$KEEP"; rm -rf "$tmp"; exit $st' EXIT
sleep 0.5
"$bin/dgrecv" --bind 'tcp://127.0.0.1:*' --schema synthetic --expect-streams 1 --json --metrics-addr "" --progress never \
	--profile "$prof" --profile-dir "$tmp/logs" > "$tmp/r.json" 2> "$tmp/r.err" &
rp=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/r.err" && break; sleep 0.05; done
ep=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/r.err")
"$bin/dgsend" --connect "$ep" --scenario synthetic-100 --bucket 100 --rate 0 --count "$count" --duration 0 --metrics-addr "" \
	--progress never --profile "$prof" --profile-dir "$tmp/logs" > /dev/null 2>&1 &
sp=$!
# A run that failed gives no figure (each status on its own: "wait A B"
# would report B's only).
wait "$sp" || { echo "dgsend failed" >&2; exit 1; }
wait "$rp" || { echo "dgrecv failed:" >&2; cat "$tmp/r.err" >&2; exit 1; }
kill -INT "$pp"; wait "$pp" || true
python3 -c 'import json,sys; print("consumed at %.3f M tuples/s" % (json.load(open(sys.argv[1]))["consume_rate_tuples_per_s"]/1e6))' "$tmp/r.json"
perf script -i "$tmp/perf.data" -F pid,ip,sym,dso 2> /dev/null | python3 -c '
import sys
# A sample counts to the profiler when any frame of its call chain is the
# profiler'"'"'s code or the compressor (so the kernel time of its writes is
# its, too); the leaf frame says which part.
pids = set(sys.argv[1:3])
parts, total = {}, 0
def part(frames):
    names = " ".join(f[1] for f in frames)
    if "cp/servicerate." in names or "cp/stage." in names:
        # the stage accounting and its estimators (sampled on the profiler'"'"'s
        # counter clock, but there with or without a profile)
        return "stage accounting and service rates"
    if "klauspost/compress" in names:
        return "profiler: zstd compression (worker)"
    if "cp/profiler.(*Channel)" in names or "cp/profiler.(*state)" in names:
        return "profiler: logging (calling thread)"
    if "cp/profiler." in names:
        return "profiler: encoding, buffers, file writes (worker)"
    leaf_sym, leaf_dso = frames[0][1], frames[0][2]
    if leaf_sym.startswith(("runtime.gcBgMarkWorker", "runtime.scanobject", "runtime.gcDrain", "runtime.mallocgc")):
        return "Go GC and allocation"
    if "kernel" in leaf_dso:
        return "kernel (loopback TCP, waits)"
    if "libzmq" in leaf_dso or "libc" in leaf_dso:
        return "libzmq and libc"
    return "the harness (sender, lane, consumer, runtime)"
def flush(pid, frames):
    global total
    if pid in pids and frames:
        k = part(frames)
        parts[k] = parts.get(k, 0) + 1
        total += 1
pid, frames = None, []
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        flush(pid, frames); pid, frames = None, []
    elif pid is None:
        pid = line.split()[0]
    else:
        f = line.split()
        if len(f) >= 2:
            frames.append((f[0], f[1], f[-1]))
flush(pid, frames)
prof = 0
for k in sorted(parts):
    print("%-52s %6.2f%%  (%d samples)" % (k, 100 * parts[k] / total, parts[k]))
    if k.startswith("profiler"):
        prof += parts[k]
print("%-52s %6.2f%%" % ("profiler, all parts", 100 * prof / total))
print("%-52s %d samples" % ("both processes", total))
' "$sp" "$rp"
