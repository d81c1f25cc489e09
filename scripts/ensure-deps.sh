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
. "$(dirname "$0")/apt-install.sh"
apt_install "the build needs them" required "${missing[@]}"
