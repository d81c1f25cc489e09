#!/usr/bin/env bash
# Installs the real servers the integration tests start on loopback
# (nats-server, with JetStream; redis-server) when they are missing, with apt-get as root
# or with sudo. Elsewhere it says what is missing; the tests that need a
# server skip (CP_REQUIRE_ALL=1 turns those skips into failures).
set -euo pipefail
missing=()
command -v nats-server >/dev/null 2>&1 || missing+=(nats-server)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
	echo "missing: ${missing[*]} (the broker tests will skip)" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	else
		echo "missing: ${missing[*]}; the broker tests will skip (sudo apt-get install -y ${missing[*]})" >&2
		exit 0
	fi
fi
echo "installing ${missing[*]} with apt-get" >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
	{ $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
	echo "could not install ${missing[*]}: the broker tests will skip" >&2
