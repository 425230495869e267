#!/bin/bash
# The bundled patched-kernel sweep (data/vm-6.12/): one `make kernels` build, one capture
# per setting, each in a fresh guest. `kernels/sweep.sh [OUT] [NAME ...]` (default: every
# setting into data/vm-6.12). Every capture uses the same workload; only the knob differs.
# Writers run 17 s (3 s warmup + 14 s): with 1 + 8 s under TCG the cgroup sometimes never
# reached its limit (one of five iterations reclaimed nothing).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$REPO/data/vm-6.12}
shift || true
export PATH="$REPO/.venv/bin:$PATH"
KERNEL=$REPO/build/kernels/bzImage
COMMON=(--kernel "$KERNEL" --accel "${MMLAB_ACCEL:-auto}" --guest-memory-mb 2048 --guest-cpus 2
	--guest-cgroup 1 --iterations "${MMLAB_ITERATIONS:-5}" --workers 8 --duration 14
	--warmup 3 --limit-mb 256 --slab-files 40000 --probe-seconds 15)

declare -A KNOBS=(
	[aa1]=""
	[aa2]=""
	[wb20]="vm.reclaim_throttle_writeback_ms=20"
	[wb500]="vm.reclaim_throttle_writeback_ms=500"
	[div1]="vm.shrinker_deferred_divisor=1"
	[divprio]="vm.shrinker_deferred_divisor=priority"
)
ORDER=(aa1 wb20 div1 wb500 divprio aa2)
names=("$@")
((${#names[@]})) || names=("${ORDER[@]}")

for name in "${names[@]}"; do
	[ -v "KNOBS[$name]" ] || { echo "sweep: unknown setting $name" >&2; exit 2; }
	sysctl=()
	[ -n "${KNOBS[$name]}" ] && sysctl=(--sysctl "${KNOBS[$name]}")
	echo "== $name: ${KNOBS[$name]:-defaults} =="
	start=$(date -u +%FT%TZ)
	mmlab capture "$OUT/$name" --run "$name" "${COMMON[@]}" "${sysctl[@]}"
	echo "   $name done ($start .. $(date -u +%FT%TZ))"
done
