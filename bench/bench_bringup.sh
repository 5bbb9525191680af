#!/bin/bash
# weft vs OpenSM bring-up on ibsim fabrics; prints a markdown table.
# Usage: bench/bench_bringup.sh BUILD/app/weft [bench_bringup.py options]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/../scripts/install-deps.sh"
exec python3 "$HERE/bench_bringup.py" --weft "$@"
