#!/bin/bash
# Brings up a simulated fabric with `weft sm --once` on ibsim and prints the
# SM's summary plus what infiniband-diags read back.
# Usage: scripts/run-on-ibsim.sh WEFT [TOPOLOGY-SPEC-OR-NETFILE]
# ibsim runs on a private IBSIM_SOCKNAME in a scratch directory and is stopped by PID.
set -euo pipefail
WEFT=$(readlink -f "$1")
SPEC=${2:-ft2:leaves=16,spines=8,hosts=8}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
DIR=$(mktemp -d /tmp/weft-run.XXXXXX)
export IBSIM_SOCKNAME="weft-run-$$"
SIM_PID=
cleanup() {
  local rc=$?
  if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; fi
  exec 7>&- 2>/dev/null || true
  rm -rf "$DIR"
  exit "$rc"
}
trap cleanup EXIT
cd "$DIR"
if [ -f "$SPEC" ]; then cp "$SPEC" fabric.net; else "$WEFT" topo "$SPEC" -o fabric.net; fi
mkfifo console
exec 7<>console                    # ibsim spins at stdin EOF: hold its console open
ibsim -s fabric.net <&7 > ibsim.log 2>&1 &
SIM_PID=$!
for _ in $(seq 1 200); do
  grep -q "Network simulator ready" ibsim.log 2>/dev/null && break
  kill -0 "$SIM_PID" 2>/dev/null || { cat ibsim.log; exit 1; }
  sleep 0.05
done
echo "== weft sm --once on ibsim ($SPEC)"
LD_PRELOAD=$UMAD2SIM "$WEFT" sm --once --state-dir "$DIR/state" --log-file "$DIR/weft.log"
grep -E "SUBNET UP|NOT up" "$DIR/weft.log" | tail -1
echo "== read back with infiniband-diags"
LD_PRELOAD=$UMAD2SIM ibnetdiscover 2>/dev/null | awk '/^Switch/{s++} /^Ca/{c++} END{printf "ibnetdiscover: %d switches, %d CAs\n", s, c}'
LD_PRELOAD=$UMAD2SIM iblinkinfo 2>/dev/null | awk '/==>/ && !/""/ {n++; if (/Active\//) a++} END{printf "iblinkinfo:    %d of %d linked ports ACTIVE\n", a, n}'
