#!/usr/bin/env bash
# Installs everything the tests start or drive, so that `make test` on a
# fresh machine runs what CI runs and skips nothing but benchmarks:
#   nats-server, redis-server      the real brokers of the broker tests
#   python3-zmq, python3-msgpack   the cross-language wire-format peer
#   python3-redis                  examples/jobs/python-ysb, YSB in Python
#   nodejs, npm                    examples/jobs/node-filter (its nats client from the npm registry)
#   chromium                       report.html and cpsweep watch's page rendered
#   tmux                           cpsweep watch's terminal test
#   prometheus                     the Grafana dashboard's queries, tested against
#                                  a real Prometheus scraping a real sweep
#   podman, netavark, aardvark-dns the agents as containers on a private network;
#   iptables                       netavark sets up that network with iptables
#                                  (Debian's podman only suggests it: without it
#                                  "netavark: No such file or directory")
# Uses apt-get as root or with sudo. Elsewhere it says what is missing, and
# the tests that need it skip (CP_REQUIRE_ALL=1 turns those skips into
# failures).
set -euo pipefail
missing=()
need() { command -v "$1" >/dev/null 2>&1 || missing+=("${@:2}"); }
need nats-server nats-server
need redis-server redis-server
need chromium chromium
need tmux tmux
need podman podman runc
need iptables iptables
[ -x /usr/lib/podman/netavark ] || [ -x /usr/libexec/podman/netavark ] || missing+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || [ -x /usr/libexec/podman/aardvark-dns ] || missing+=(aardvark-dns)
/usr/bin/python3 -c 'import zmq, msgpack' 2>/dev/null || missing+=(python3-zmq python3-msgpack)
/usr/bin/python3 -c 'import redis' 2>/dev/null || missing+=(python3-redis)
need node nodejs
need npm npm
prom=()
command -v prometheus >/dev/null 2>&1 || prom=(prometheus)
[ ${#missing[@]} -eq 0 ] && [ ${#prom[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
	echo "missing: ${missing[*]} ${prom[*]} (the tests that need them will skip)" >&2
	exit 0
fi
. "$(dirname "$0")/apt-install.sh"
[ ${#missing[@]} -eq 0 ] || apt_install "the tests that need them will skip" optional "${missing[@]}"
# Prometheus alone, without what it recommends (node-exporter and its
# collectors, services the test does not want).
[ ${#prom[@]} -eq 0 ] || APT_FLAGS=--no-install-recommends apt_install "the dashboard test will skip" optional "${prom[@]}"
