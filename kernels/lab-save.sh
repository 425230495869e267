#!/bin/bash
# Keep a running plan's finished runs in the repository, so a later session on a new machine
# resumes it (kernels/lab.sh copies them back): `kernels/lab-save.sh [OUT_ROOT] [PLAN ...]`
# copies OUT_ROOT/<plan> (default build/lab) to kernels/in-progress/<plan>, without the
# runs in progress (.staging, .installing-*) and the executor's lock. Commit kernels/in-progress afterwards.
# A complete plan moves to data/ with its README instead (kernels/readme.py).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${1:-$REPO/build/lab}
shift || true
plans=("$@")
((${#plans[@]})) || plans=(sweep-throttle-6.12 sweep-divisor-6.12)
for plan in "${plans[@]}"; do
	[ -f "$ROOT/$plan/order.json" ] || { echo "$plan: nothing in $ROOT/$plan"; continue; }
	kept=${LAB_KEEP:-$REPO/kernels/in-progress}/$plan
	rm -rf "$kept.new"
	mkdir -p "$kept.new"
	tar -C "$ROOT/$plan" --exclude=./.staging --exclude=./.lock --exclude='.installing-*' \
		-cf - . | tar -C "$kept.new" -xf -
	rm -rf "$kept"
	mv "$kept.new" "$kept"
	echo "$plan: $(ls -d "$kept"/*/iter-* 2>/dev/null | wc -l) runs kept"
done
