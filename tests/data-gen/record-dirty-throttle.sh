#!/bin/bash
# Records tests/data/writeback/balance_dirty_pages.trace (tests/data/README.md): writer
# throttling by balance_dirty_pages without touching the machine's dirty limits. A loop
# device's own BDI gets strict_limit and a 4 MiB max_bytes, so only writes to its
# filesystem are throttled; the writer runs in a v1 memory cgroup limited to 64 MiB.
# kmem:mm_page_alloc_extfrag is traced beside it. Run as root; OUT is created.
set -euo pipefail
OUT=${1:?usage: record-dirty-throttle.sh OUT}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/mmlab-dirty.XXXXXX)
T=/sys/kernel/tracing/instances/mmlab_inputs_dirty
CG=/sys/fs/cgroup/memory/mmlab-inputs-dirty
truncate -s 400M "$WORK/img"
LOOP=$(losetup -f --show "$WORK/img")
cleanup() {
  umount "$WORK/mnt" 2>/dev/null || true
  losetup -d "$LOOP" 2>/dev/null || true
  rmdir "$T" "$CG" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
mkfs.ext4 -q "$LOOP"
mkdir "$WORK/mnt"
mount "$LOOP" "$WORK/mnt"
BDI=/sys/class/bdi/$(lsblk -no MAJ:MIN "$LOOP" | tr -d ' ')
echo 1 > "$BDI/strict_limit"
echo $((4 << 20)) > "$BDI/max_bytes"
mkdir "$CG" "$T"
echo $((64 << 20)) > "$CG/memory.limit_in_bytes"
echo 1 > "$T/events/writeback/balance_dirty_pages/enable"
echo 1 > "$T/events/kmem/mm_page_alloc_extfrag/enable"
echo 1 > "$T/tracing_on"
sh -c "echo \$\$ > $CG/cgroup.procs; exec dd if=/dev/zero of=$WORK/mnt/f bs=1M count=150 status=none"
sync
echo 0 > "$T/tracing_on"
cat "$T/trace" > "$OUT/balance_dirty_pages.trace"
echo 0 > "$T/events/writeback/balance_dirty_pages/enable"
echo 0 > "$T/events/kmem/mm_page_alloc_extfrag/enable"
