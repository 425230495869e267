#!/bin/bash
# Records the real samples of tests/data/{bpftrace,psi}/ (tests/data/README.md): a
# vmscan.bt-style bpftrace script (text and -f json) and PSI files while a workload
# reclaims inside a memory cgroup (v1, memory.limit_in_bytes 64 MiB; the machine itself is
# never under pressure). The workload's v2 cgroup (no controllers, PSI only) gives its own
# memory.pressure and bpftrace's cgroup filter. Run as root; OUT is created.
set -euo pipefail
OUT=${1:?usage: record-inputs.sh OUT}
mkdir -p "$OUT"
V1=/sys/fs/cgroup/memory/mmlab-inputs-rec
V2=/sys/fs/cgroup/unified/mmlab-inputs-rec
mkdir "$V1" "$V2"
trap 'rmdir "$V1" "$V2" 2>/dev/null || true' EXIT
echo $((64 << 20)) > "$V1/memory.limit_in_bytes"
ID=$(stat -c %i "$V2")

SCRIPT='
tracepoint:vmscan:mm_vmscan_memcg_reclaim_begin,
tracepoint:vmscan:mm_vmscan_direct_reclaim_begin /cgroup == '$ID'/ { @start[tid] = nsecs; }
tracepoint:vmscan:mm_vmscan_memcg_reclaim_end /@start[tid]/ {
  @memcg_reclaim_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
tracepoint:vmscan:mm_vmscan_direct_reclaim_end /@start[tid]/ {
  @direct_reclaim_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
tracepoint:vmscan:mm_shrink_slab_start /cgroup == '$ID'/ { @ss[tid] = nsecs; }
tracepoint:vmscan:mm_shrink_slab_end /@ss[tid]/ {
  @shrink_slab_ns = hist(nsecs - @ss[tid]); delete(@ss[tid]); }
tracepoint:vmscan:mm_vmscan_throttled /cgroup == '$ID'/ {
  @throttle_us = lhist(args->usec_delayed, 0, 104000, 4000);
  @throttled[args->reason, args->usec_timeout, args->usec_delayed] = count(); }
END { clear(@start); clear(@ss); }'

sample() { # FILE SOURCE: "# t=<CLOCK_MONOTONIC s>" then the kernel text, every second
  while :; do
    printf '# t=%s\n' "$(awk '{print $1}' /proc/uptime)" >> "$1"
    cat "$2" >> "$1"
    sleep 1
  done
}
cat /proc/pressure/memory > "$OUT/pressure-memory-snapshot"
sample "$OUT/psi-memory" /proc/pressure/memory & P1=$!
sample "$OUT/cgroup-memory.pressure" "$V2/memory.pressure" & P2=$!
for fmt in text json; do
  bpftrace -f "$fmt" -o "$OUT/vmscan-bt.$fmt" -e "$SCRIPT" & B=$!
  sleep 3
  sh -c "echo \$\$ > $V1/cgroup.procs; echo \$\$ > $V2/cgroup.procs; exec python3 -c '
import os
with open(\"$OUT/.work\", \"wb\") as f:
    for _ in range(200):
        f.write(os.urandom(1 << 20))
    f.flush(); os.fsync(f.fileno())
with open(\"$OUT/.work\", \"rb\") as f:
    while f.read(1 << 20):
        pass
block = bytearray(40 << 20)
'"
  rm -f "$OUT/.work"
  kill -INT $B; wait $B || true
done
kill $P1 $P2
wait $P1 $P2 2>/dev/null || true
