#!/bin/bash
# weft sm as a daemon on a simulated fabric (ibsim), with its REST API up: prints the
# bring-up summary, what infiniband-diags read back, the URL, the admin credentials
# weft generated and three curl lines to try, then runs until Ctrl-C.
# Usage: scripts/run-on-ibsim.sh WEFT [TOPOLOGY-SPEC-OR-NETFILE]
# Environment: WEFT_REST_PORT (default 7443; a free one when it is taken).
# ibsim runs on a private IBSIM_SOCKNAME in a scratch directory; both it and weft are
# stopped by PID on the way out, however the script ends.
set -euo pipefail
WEFT=$(readlink -f "$1")
SPEC=${2:-ft2:leaves=16,spines=8,hosts=8}
PORT=${WEFT_REST_PORT:-7443}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
DIR=$(mktemp -d /tmp/weft-run.XXXXXX)
export IBSIM_SOCKNAME="weft-run-$$"
SIM_PID=
SM_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$SM_PID" ]; then kill "$SM_PID" 2>/dev/null || true; wait "$SM_PID" 2>/dev/null || true; fi
  if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; fi
  exec 7>&- 2>/dev/null || true
  rm -rf "$DIR"
  echo "== stopped (weft and ibsim)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 0' INT TERM
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if ! port_free "$PORT"; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
cd "$DIR"
if [ -f "$SPEC" ]; then cp "$SPEC" fabric.net; else "$WEFT" topo "$SPEC" -o fabric.net; fi
mkfifo console
exec 7<>console                    # ibsim spins at stdin EOF: hold its console open
ibsim -s fabric.net <&7 > ibsim.log 2>&1 &
SIM_PID=$!
for _ in $(seq 1 400); do
  grep -q "Network simulator ready" ibsim.log 2>/dev/null && break
  kill -0 "$SIM_PID" 2>/dev/null || { cat ibsim.log; exit 1; }
  sleep 0.05
done
echo "== weft sm on ibsim ($SPEC), REST on 127.0.0.1:$PORT"
LD_PRELOAD=$UMAD2SIM "$WEFT" sm --state-dir "$DIR/state" --log-file "$DIR/weft.log" \
  --rest "127.0.0.1:$PORT" > "$DIR/weft.out" 2>&1 &
SM_PID=$!
for _ in $(seq 1 1200); do
  grep -qE "SUBNET UP|NOT up" "$DIR/weft.log" 2>/dev/null && break
  kill -0 "$SM_PID" 2>/dev/null || { cat "$DIR/weft.out"; exit 1; }
  sleep 0.05
done
for _ in $(seq 1 100); do grep -q "problems" "$DIR/weft.out" && break; sleep 0.05; done
sed -n '/SUBNET UP\|NOT up/,/problems/p' "$DIR/weft.out" | head -12
echo "== read back with infiniband-diags"
LD_PRELOAD=$UMAD2SIM ibnetdiscover 2>/dev/null | awk '/^Switch/{s++} /^Ca/{c++} END{printf "ibnetdiscover: %d switches, %d CAs\n", s, c}'
LD_PRELOAD=$UMAD2SIM iblinkinfo 2>/dev/null | awk '/==>/ && !/""/ {n++; if (/Active\//) a++} END{printf "iblinkinfo:    %d of %d linked ports ACTIVE\n", a, n}'
CRED=$(cat "$DIR/state/rest-admin-password")
URL="http://127.0.0.1:$PORT"
GUID=$(curl -s -u "$CRED" "$URL/ufmRest/resources/ports" |
  python3 -c 'import json,sys; print(next(p["guid"] for p in json.load(sys.stdin) if p["system_name"].startswith("h")))')
cat <<EOF
== REST API: $URL  (user:password $CRED, from $DIR/state/rest-admin-password)
curl -s -u '$CRED' $URL/api/v1/sm
curl -s -u '$CRED' '$URL/ufmRest/resources/pkeys?guids_data=true'
curl -s -u '$CRED' -H 'Content-Type: application/json' -d '{"pkey": "0x0a12", "guids": ["$GUID"], "index0": true, "ip_over_ib": true, "membership": "full"}' $URL/ufmRest/resources/pkeys
== running; Ctrl-C stops weft and ibsim
EOF
wait "$SM_PID"
