#!/bin/bash
# The bundled lab runs, in order, each a resumable `mmlab experiment run` (run this script
# again after an interruption: finished runs are kept). `kernels/lab.sh [OUT_ROOT] [PLAN ...]`
# (default: the platform paths, the 2x2 demo, the pilot, then both sweeps, into
# build/lab/<plan>). Guests are niced: the host keeps serving its other work.
#
# A sweep takes longer than a session on a machine that does not outlive it: a plan whose
# OUT is missing but whose finished runs were kept in kernels/in-progress/<plan> (by
# kernels/lab-save.sh) resumes from them.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${1:-$REPO/build/lab}
shift || true
plans=("$@")
((${#plans[@]})) || plans=(paths-6.12 demo-6.12 pilot-6.12 sweep-throttle-6.12 sweep-divisor-6.12)
export PATH="$REPO/.venv/bin:$PATH"
for plan in "${plans[@]}"; do
	out=$ROOT/$plan
	kept=${LAB_KEEP:-$REPO/kernels/in-progress}/$plan
	if [ ! -e "$out" ] && [ -d "$kept" ]; then
		mkdir -p "$ROOT"
		cp -a "$kept" "$out"
		echo "== $plan: resuming from the runs kept in $kept =="
	fi
	echo "== $plan -> $out ($(date -u +%FT%TZ)) =="
	nice -n 10 mmlab experiment run "$REPO/kernels/plans/$plan.yaml" "$out" || \
		echo "   $plan: not every run succeeded (mmlab experiment status $out)"
done
