#!/bin/bash
# Issue 28's done-when on the real kernel: the 2x2 demo plan, interrupted with SIGINT during
# its second run and SIGKILLed during its third, each time resumed by running the same
# command again; then its status. `kernels/demo-resume.sh OUT` (after `make kernels`).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: kernels/demo-resume.sh OUT}
PLAN=$REPO/kernels/plans/demo-6.12.yaml
export PATH="$REPO/.venv/bin:$PATH"
run() { nice -n 10 mmlab experiment run "$PLAN" "$OUT" & pid=$!; }
# Wait until the executor has started guest number $1 (its journal's "start" lines).
wait_start() {
	until [ "$(cat "$OUT/journal.jsonl" 2>/dev/null | grep -c '"event": "start"')" -ge "$1" ]; do
		sleep 2
	done
	sleep 30  # well inside the guest's run
}
say() { echo "== $(date -u +%FT%TZ) $*"; }

say "start"; run; wait_start 2
say "SIGINT to $pid during the second run"; kill -INT "$pid"; wait "$pid"; say "exit $?"
say "resume"; run; wait_start 4
say "SIGKILL to $pid during the third run"; kill -KILL "$pid"; wait "$pid"; say "exit $?"
pgrep -af "qemu-system" | grep -c "$OUT" | sed 's/^/guests left running: /'
say "resume"; run; wait "$pid"; say "exit $?"
mmlab experiment status "$OUT"
grep -o '"event": "[a-z]*"' "$OUT/journal.jsonl" | sort | uniq -c
