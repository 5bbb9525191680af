#!/bin/bash
# Installs the Debian 12 packages weft needs to build, test and run, if missing.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds opensm)
set -euo pipefail
PKGS=(build-essential cmake pkg-config libibumad-dev libibmad-dev libboost-dev
      libboost-graph-dev libboost-program-options-dev nlohmann-json3-dev libgtest-dev libgmock-dev
      libyaml-dev libhiredis-dev ibsim-utils infiniband-diags iproute2 redis-server python3)
[ "${1:-}" = "--bench" ] && PKGS+=(opensm)
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
