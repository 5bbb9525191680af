#!/bin/bash
# Installs every Debian 12 package weft needs to build, test, package, benchmark and
# run, if missing. There is one list and no flag: whatever a test, a script or the
# package build calls comes from it (tests/repo/deps_test.py keeps it so).
# Usage: scripts/install-deps.sh          install what is missing
#        scripts/install-deps.sh --list   print the list, one package per line
set -euo pipefail
PKGS=(
  # build
  build-essential cmake pkg-config libibumad-dev libibmad-dev libboost-dev
  libboost-graph-dev libboost-program-options-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev libyaml-dev libhiredis-dev librestinio-dev libhttp-parser-dev
  libssl-dev libcrypt-dev libcurl4-openssl-dev
  # ccache: rebuilds, fresh clones on the same machine and the package build reuse what
  # was compiled before (CMakeLists.txt compiles through it when it is installed)
  ccache
  # scripts/devloop.sh times builds in clones of the repository
  git
  # tests: ibsim and the diags that read back what weft programmed, OpenSM (its
  # `opensm -c` config and, in make bench, the SM weft is measured against), redis for
  # the RoCE CONFIG_DB tests, the format check
  ibsim-utils infiniband-diags opensm iproute2 redis-server redis-tools python3
  clang-format
  # setcap and setpriv: weft with file capabilities, run by an unprivileged user
  libcap2-bin util-linux
  # the REST tests and benchmark: openssl (a test certificate, users' hashes as
  # `openssl passwd -6` writes them), promtool (prometheus) to check /metrics, wrk,
  # curl (make run prints curl lines, and its test runs them)
  openssl prometheus wrk curl
  # the etcd state store's tests and benchmark: a local etcd on loopback, and etcdctl
  # to read back what weft wrote
  etcd-server etcd-client
  # the topology page's test and benchmark: headless Chromium, and a font for its
  # screenshots
  chromium fonts-dejavu-core
  # the Debian package and its checks (make deb; systemd-analyze verify, which looks
  # the units' Documentation= pages up with man, and ExecReload's /bin/kill)
  debhelper dpkg-dev fakeroot help2man systemd man-db procps
)
if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${PKGS[@]}"
  exit 0
fi
if [ $# -gt 0 ]; then
  echo "usage: scripts/install-deps.sh [--list]" >&2
  exit 2
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
