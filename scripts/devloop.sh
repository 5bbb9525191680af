#!/bin/bash
# How long the developer's loop takes on this machine: builds and test runs as a
# developer and CI meet them, timed one after another from clones of this repository's
# HEAD in a scratch directory (the working tree is not touched). Prints a table for
# README's section for developers.
#
#   clean build, no cache      a fresh clone built with ccache off (CCACHE_DISABLE)
#   warm clone build           another fresh clone, at another path, built after one
#                              build has filled the cache (CI's path on a kept machine)
#   touch .cpp + make check    touch sm/src/subnet_manager.cpp, rebuild, run make check
#   touch .hpp rebuild         touch sm/include/weft/sm/subnet_manager.hpp, rebuild
#   make check                 the unit-labelled tests alone, built tree
#   make test                  every test, in the warm clone (skipped with --quick)
#
# Usage: scripts/devloop.sh [--quick] [--keep]
#   --quick  leave out make test (about 10 minutes)
#   --keep   keep the scratch clones (their path is printed)
set -euo pipefail
QUICK=0
KEEP=0
for a in "$@"; do
  if [ "$a" = --quick ]; then
    QUICK=1
  elif [ "$a" = --keep ]; then
    KEEP=1
  else
    echo "usage: scripts/devloop.sh [--quick] [--keep]" >&2
    exit 2
  fi
done
TOP=$(cd "$(dirname "$0")/.." && pwd)
command -v ccache >/dev/null || { echo "devloop: ccache is not installed (make deps)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/weft-devloop.XXXXXX)
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT
LOG="$WORK/log"
: >"$LOG"
JOBS=$(nproc)

# step NAME COMMAND...: runs COMMAND (output to the log), records its wall time.
declare -a NAMES SECS
step() {
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  if ! "$@" >>"$LOG" 2>&1; then
    echo "devloop: '$name' failed; the last lines of $LOG:" >&2
    tail -30 "$LOG" >&2
    KEEP=1
    exit 1
  fi
  t1=$(date +%s.%N)
  NAMES+=("$name")
  SECS+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
  printf 'devloop: %-28s %7.1f s\n' "$name" "${SECS[-1]}" >&2
}

clone() { git clone -q "$TOP" "$1"; }
build() { make -C "$1" build JOBS="$JOBS"; }
check() { make -C "$1" check JOBS="$JOBS"; }
touch_build_check() { touch "$1/$2" && build "$1" && check "$1"; }
touch_build() { touch "$1/$2" && build "$1"; }

echo "devloop: HEAD $(git -C "$TOP" rev-parse --short HEAD), $JOBS cores, scratch $WORK" >&2
make -C "$TOP" deps >>"$LOG" 2>&1
clone "$WORK/cold"
step "clean build, no cache" env CCACHE_DISABLE=1 make -C "$WORK/cold" build JOBS="$JOBS"
# One build through the cache (what a developer's earlier build leaves), then a fresh
# clone at another path.
clone "$WORK/first"
build "$WORK/first" >>"$LOG" 2>&1
rm -rf "$WORK/cold" "$WORK/first"
clone "$WORK/clone"
step "warm clone build" build "$WORK/clone"
step "touch .cpp, build, make check" touch_build_check "$WORK/clone" sm/src/subnet_manager.cpp
step "touch .hpp, build" touch_build "$WORK/clone" sm/include/weft/sm/subnet_manager.hpp
step "make check" check "$WORK/clone"
UNIT=$(cd "$WORK/clone/build" && ctest -N -L unit | sed -n 's/^Total Tests: //p')
ALL=$(cd "$WORK/clone/build" && ctest -N | sed -n 's/^Total Tests: //p')
if [ "$QUICK" = 0 ]; then
  step "make test" make -C "$WORK/clone" test JOBS="$JOBS"
fi

echo
echo "| step (weft $(git -C "$TOP" rev-parse --short HEAD), $JOBS cores) | time |"
echo "|---|---|"
for i in "${!NAMES[@]}"; do
  printf '| %s | %dm %02ds |\n' "${NAMES[$i]}" "$(printf '%.0f' "${SECS[$i]}" | awk '{print int($1/60)}')" \
    "$(printf '%.0f' "${SECS[$i]}" | awk '{print $1%60}')"
done
echo
echo "make check runs $UNIT of the $ALL ctest entries (label unit)."
