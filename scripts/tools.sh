#!/usr/bin/env bash
# tools: install the machine tools that `make test` and `make cluster` need
# beyond Go and git, from Debian's packages, and say what it installs: the
# linter of make lint (package shellcheck); skopeo, with which the harness
# checks the release image; containerd and runc, the container runtime of
# make cluster's nodes; containernetworking-plugins, the CNI plugins that
# give their pods a network; iptables, which those plugins use; ip,
# sysctl and nsenter, with which the cluster makes its nodes' networks; and
# gcc with the C library's headers (libc6-dev), for the cgo that the race
# detector of the harness's race check needs (go test -race).
# What the Go module proxy provides (etcd, benchstat, the cluster's binaries)
# is built by the targets that use it, pinned in the repository. Nothing is
# installed when every tool is there; otherwise this needs root (or sudo
# without a password) and apt-get, and fails naming what is missing when it
# cannot install it.
set -euo pipefail

# command (or a file it installs) -> Debian package
tools=(
	shellcheck:shellcheck
	skopeo:skopeo
	containerd:containerd
	runc:runc
	/usr/lib/cni/bridge:containernetworking-plugins
	/usr/lib/cni/host-local:containernetworking-plugins
	/usr/lib/cni/loopback:containernetworking-plugins
	iptables:iptables
	ip:iproute2
	sysctl:procps
	nsenter:util-linux
	gcc:gcc
	/usr/include/stdlib.h:libc6-dev
)

missing=()
for t in "${tools[@]}"; do
	cmd=${t%%:*}
	pkg=${t#*:}
	if [[ $cmd == /* ]]; then
		[[ -e $cmd ]] && continue
	else
		command -v "$cmd" >/dev/null && continue
		# iptables and a few others live in sbin, which a user's PATH may lack.
		[[ -x /usr/sbin/$cmd || -x /sbin/$cmd ]] && continue
	fi
	[[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
done
if [[ ${#missing[@]} -eq 0 ]]; then
	echo "tools: shellcheck, skopeo, containerd, runc, CNI plugins, iptables, ip, sysctl, nsenter, gcc, libc6-dev present"
	exit 0
fi

fail() {
	echo "tools: missing Debian packages: ${missing[*]}" >&2
	echo "tools: $1; install them and run make again" >&2
	exit 1
}
command -v apt-get >/dev/null || fail "there is no apt-get (this is not a Debian or Ubuntu machine)"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
		fail "installing needs root, and this is user $(id -un) without sudo"
	fi
	sudo=(sudo -n)
fi
echo "tools: installing from Debian's packages: ${missing[*]}"
"${sudo[@]}" apt-get update -qq || fail "apt-get update failed"
# policy-rc.d 101: the package scripts do not start a host containerd; the
# cluster runs containerds of its own.
rc=/usr/sbin/policy-rc.d
if [[ ! -e $rc ]]; then
	"${sudo[@]}" sh -c "printf '#!/bin/sh\nexit 101\n' > $rc && chmod 755 $rc"
	trap '"${sudo[@]}" rm -f "$rc"' EXIT
fi
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
	fail "apt-get install failed"
echo "tools: installed ${missing[*]}"
