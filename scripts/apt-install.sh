# Sourced by ensure-deps.sh and ensure-test-deps.sh.
#
# apt_install WHY MODE PACKAGE... installs the packages with apt-get, as
# root or with sudo (trying once more after an apt-get update). WHY says
# what happens without them. MODE "required" ends the script with status 1
# when they cannot be installed; "optional" says so and ends it with 0 (the
# tests that need them skip, or fail under CP_REQUIRE_ALL). APT_FLAGS, if
# set, is passed to apt-get install (e.g. --no-install-recommends).
apt_install() {
	local why=$1 mode=$2 fail=1 sudo=""
	shift 2
	[ "$mode" = optional ] && fail=0
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo="sudo -n"
		else
			echo "missing: $*; $why (run as root or: sudo apt-get install -y $*)" >&2
			exit $fail
		fi
	fi
	echo "installing $* with apt-get" >&2
	# shellcheck disable=SC2086 # APT_FLAGS is a list of flags
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ${APT_FLAGS:-} "$@" >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ${APT_FLAGS:-} "$@" >/dev/null; } ||
		{ echo "could not install $*: $why" >&2; exit $fail; }
}
