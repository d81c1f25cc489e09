#!/usr/bin/env bash
# Installs the system packages the build and tests need when they are
# missing: libzmq3-dev and pkg-config (cgo for pebbe/zmq4), iproute2 (network
# namespaces in the multi-host tests). Uses apt-get as root or with sudo;
# elsewhere it says what to install.
set -euo pipefail

missing=()
pkg-config --exists libzmq 2>/dev/null || missing+=(libzmq3-dev pkg-config)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	cat >&2 <<MSG
missing: ${missing[*]}
Install libzmq (>= 4.3) with its development files and pkg-config, e.g.
  Fedora/RHEL: dnf install zeromq-devel pkgconf-pkg-config iproute
  macOS:       brew install zeromq pkg-config
MSG
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	else
		echo "missing: ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
fi
echo "installing ${missing[*]} with apt-get" >&2
$sudo apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
