#!/bin/bash
# Builds weft's Debian package from this tree and leaves weft_*.deb in OUTDIR
# (default: the tree's top). The tree is copied to a scratch directory first, so the
# build leaves nothing in it but the package.
# Usage: scripts/make-deb.sh [OUTDIR]
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mkdir -p "${1:-$TOP}" && cd "${1:-$TOP}" && pwd)
WORK=$(mktemp -d /tmp/weft-deb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir "$WORK/weft"
tar -C "$TOP" --exclude=./.git --exclude='./build*' --exclude=./results --exclude='./weft_*' \
    --exclude='*.deb' -cf - . | tar -C "$WORK/weft" -xf -
# ccache, when installed (CMakeLists.txt compiles through it), keeps using the cache the
# developer's builds fill: debhelper points HOME elsewhere while it builds, so the cache
# directory is named here. The package's Release build then recompiles only what changed.
if command -v ccache >/dev/null; then
  CCACHE_DIR="${CCACHE_DIR:-$(ccache -k cache_dir)}"
  export CCACHE_DIR
fi
(cd "$WORK/weft" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b)
mv "$WORK"/weft_*.deb "$WORK"/weft_*.buildinfo "$WORK"/weft_*.changes "$OUT"/
ls "$OUT"/weft_*.deb
