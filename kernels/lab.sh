#!/bin/bash
# The bundled lab runs, in order, each a resumable `mmlab experiment run` (run this script
# again after an interruption: finished runs are kept). `kernels/lab.sh [OUT_ROOT] [PLAN ...]`
# (default: the platform paths, the 2x2 demo, the pilot, then both sweeps, into
# build/lab/<plan>). Guests are niced: the host keeps serving its other work.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${1:-$REPO/build/lab}
shift || true
plans=("$@")
((${#plans[@]})) || plans=(paths-6.12 demo-6.12 pilot-6.12 sweep-throttle-6.12 sweep-divisor-6.12)
export PATH="$REPO/.venv/bin:$PATH"
for plan in "${plans[@]}"; do
	echo "== $plan -> $ROOT/$plan ($(date -u +%FT%TZ)) =="
	nice -n 10 mmlab experiment run "$REPO/kernels/plans/$plan.yaml" "$ROOT/$plan" || \
		echo "   $plan: not every run succeeded (mmlab experiment status $ROOT/$plan)"
done
