#!/usr/bin/env bash
# Builds the cp image without a base image, for hosts that cannot pull one
# (a closed network): the four binaries built here (cpjob: YSB, docs/sut.md), the shared libraries
# they and /bin/sh, tar and sleep load (ldd), and a passwd entry for the
# user the manifests run as, imported as one layer with podman import.
# A statically linked build is not possible with Debian's libzmq.a: it is
# built with GSSAPI, and Debian ships no static MIT Kerberos libraries
# (docs/kubernetes.md).
#   scripts/image-from-host.sh [TAG]     (default cloudprofiler-go/cp:latest, make image's)
# EXTRA_BINS="/usr/bin/nats-server /usr/bin/redis-server" adds host programs
# (the container test's broker and YSB's Redis; not for a real image).
set -euo pipefail
tag=${1:-cloudprofiler-go/cp:latest}
bin=${BIN:-bin}
engine=${ENGINE:-podman}
for b in dgsend dgrecv cpsweep cpjob; do
	[ -x "$bin/$b" ] || { echo "$bin/$b missing: run make build first" >&2; exit 1; }
done
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/bin" "$root/etc" "$root/tmp" "$root/runs"
chmod 1777 "$root/tmp" "$root/runs"
cp "$bin/dgsend" "$bin/dgrecv" "$bin/cpsweep" "$bin/cpjob" "$root/usr/local/bin/"
for x in ${EXTRA_BINS:-}; do
	cp -L "$x" "$root/usr/local/bin/"
done
tools=()
for t in sh tar sleep; do
	path=$(command -v "$t")
	cp -L "$path" "$root/bin/$t"
	tools+=("$path")
done
# every shared library any of them loads, at the path the loader expects
for f in "$root"/usr/local/bin/* "${tools[@]}"; do
	ldd "$f" | awk '/=> \// {print $3} /^\t\// {print $1}'
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
printf 'root:x:0:0:root:/root:/bin/sh\ncp:x:65532:65532:cp:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\ncp:x:65532:\n' >"$root/etc/group"
tar -C "$root" -c . | "$engine" import \
	--change 'USER 65532:65532' --change 'WORKDIR /tmp' \
	--change 'ENV PATH=/usr/local/bin:/bin' --change 'CMD ["cpsweep","--help"]' - "$tag" >/dev/null
echo "built $tag from $bin/ and this host's libraries ($(du -sh "$root" | cut -f1))"
