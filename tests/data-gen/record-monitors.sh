#!/bin/bash
# Records tests/data/mmtests-monitors/ (tests/data/README.md): an mmtests-shaped iteration
# whose /proc monitors were taken as mmtests' monitors/watch-*.sh take them ("time:
# <epoch>" then the file; vmstat -n with mmtests' "<epoch> <elapsed> <delta> --" prefix),
# every second, while a writer reclaims in a v1 memory cgroup limited to 64 MiB.
set -euo pipefail
OUT=${1:?usage: record-monitors.sh OUT}
TEST=writer
DIR="$OUT/work/log/monitors/iter-0"
mkdir -p "$DIR"
CG=/sys/fs/cgroup/memory/mmlab-inputs-mon
WORK=$(mktemp -d /tmp/mmlab-mon.XXXXXX)
mkdir "$CG"
trap 'rmdir "$CG" 2>/dev/null || true; rm -rf "$WORK"' EXIT
echo $((64 << 20)) > "$CG/memory.limit_in_bytes"
watch() { # NAME FILE
  for _ in 1 2 3 4; do echo "time: $(date +%s)"; cat "$2"; sleep 1; done | gzip > "$DIR/$1-$TEST.gz"
}
watch proc-buddyinfo /proc/buddyinfo & watch proc-pagetypeinfo /proc/pagetypeinfo &
watch proc-zoneinfo /proc/zoneinfo & watch slabinfo /proc/slabinfo &
watch proc-meminfo /proc/meminfo &
START=$(date +%s.%N)
stdbuf -oL vmstat -n 1 5 | while read -r line; do
  case $line in procs*|r*) continue ;; esac # the header, which mmtests' logs do not hold
  now=$(date +%s.%N)
  printf '%.4f %8.4f %10.4f -- %s\n' "$now" "$(echo "$now - $START" | bc)" 1 "$line"
done | gzip > "$DIR/vmstat-$TEST.gz" &
sh -c "echo \$\$ > $CG/cgroup.procs; exec dd if=/dev/zero of=$WORK/f bs=1M count=200 status=none"
wait
