#!/bin/bash
# `make kernels`: Debian's linux-source-6.12 + kernels/patches/ -> build/kernels/bzImage,
# with build/kernels/config, build/kernels/build.json (source package, patch-series hash,
# compiler, config hash, build time) beside it. Re-running rebuilds only what changed; a
# changed patch series or package version starts again from a fresh source tree.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${KERNELS_OUT:-$REPO/build/kernels}
JOBS=${KERNELS_JOBS:-2}
PACKAGE=linux-source-6.12
TARBALL=/usr/src/linux-source-6.12.tar.xz
PATCHES=("$REPO"/kernels/patches/*.patch)
FRAGMENT=$REPO/kernels/mmlab.config
# What the build and the guest need from Debian (qemu for the guest, busybox for virtme-ng's
# initramfs when it needs one).
DEBS=(linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev dwarves cpio
	zstd xz-utils qemu-system-x86 busybox-static e2fsprogs xfsprogs)

die() { echo "make kernels: $*" >&2; exit 2; }

missing=()
for p in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	if [ "$(id -u)" = 0 ]; then
		echo "== installing ${missing[*]} =="
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null
	else
		die "needs Debian packages: sudo apt-get install --no-install-recommends ${missing[*]}"
	fi
fi
export PATH="$REPO/.venv/bin:$PATH"
command -v vng >/dev/null || die "vng missing: run 'make setup' (virtme-ng is in the kernels dependency group)"

version=$(dpkg-query -W -f='${Version}' "$PACKAGE")
series=$(cat "${PATCHES[@]}" | sha256sum | cut -d' ' -f1)
src=$OUT/linux-source-6.12
stamp="$PACKAGE $version $series"

mkdir -p "$OUT"
if [ ! -f "$src/.mmlab-stamp" ] || [ "$(cat "$src/.mmlab-stamp")" != "$stamp" ]; then
	echo "== fresh source tree: $PACKAGE $version, patch series $series =="
	rm -rf "$src"
	tar -C "$OUT" -xf "$TARBALL"
	for p in "${PATCHES[@]}"; do
		patch -d "$src" -p1 --dry-run -s <"$p" >/dev/null || die "$p does not apply to $PACKAGE $version"
		patch -d "$src" -p1 -s <"$p"
		echo "   applied $(basename "$p")"
	done
	echo "$stamp" >"$src/.mmlab-stamp"
	rm -f "$src/.config"
fi

cd "$src"
# Reproducible: no per-user virtme-ng config, fixed build banner.
export HOME=$OUT/home KBUILD_BUILD_USER=mmlab KBUILD_BUILD_HOST=mmlab
export KBUILD_BUILD_TIMESTAMP="$PACKAGE $version"
mkdir -p "$HOME"
if [ ! -f .config ] || [ "$FRAGMENT" -nt .config ]; then
	echo "== config: vng --kconfig + kernels/mmlab.config =="
	vng --kconfig --config "$FRAGMENT" >"$OUT/kconfig.log" 2>&1 || { tail "$OUT/kconfig.log"; die "vng --kconfig failed"; }
	# virtme-ng turns on DWARF debug info for gdb; the captures need none, and it doubles
	# the build time on two cores.
	./scripts/config --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --enable DEBUG_INFO_NONE \
		--disable DEBUG_INFO
	make olddefconfig >/dev/null
	for opt in MEMCG MEMCG_V1 SWAP TRANSPARENT_HUGEPAGE COMPACTION FTRACE VIRTIO_BLK EXT4_FS \
		XFS_FS OVERLAY_FS 9P_FS IKCONFIG_PROC; do
		grep -q "^CONFIG_$opt=y" .config || die ".config lacks CONFIG_$opt=y after olddefconfig"
	done
fi

echo "== building bzImage (nice -n 19 make -j$JOBS; tens of minutes on two cores) =="
start=$(date +%s)
nice -n 19 make -j"$JOBS" bzImage >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; die "build failed (log: $OUT/build.log)"; }
end=$(date +%s)

cp arch/x86/boot/bzImage "$OUT/bzImage"
cp .config "$OUT/config"
release=$(make -s kernelrelease)
compiler=$(gcc --version | head -1)
python3 - "$OUT/build.json" <<EOF
import json, sys
patches = """$(for p in "${PATCHES[@]}"; do echo "$(basename "$p") $(sha256sum <"$p" | cut -d' ' -f1)"; done)"""
json.dump({
    "kernel_release": "$release",
    "source_package": "$PACKAGE $version",
    "patch_series_sha256": "$series",
    "patch_series_hash_of": "the patch files concatenated in name order",
    "patches": [dict(zip(("file", "sha256"), line.split())) for line in patches.splitlines()],
    "compiler": "$compiler",
    "config_sha256": "$(sha256sum <.config | cut -d' ' -f1)",
    "config_fragment": "kernels/mmlab.config",
    "config_hz": int("$(sed -n 's/^CONFIG_HZ=//p' .config)"),
    "vng_version": "$(vng --version)",
    "bzimage_sha256": "$(sha256sum <"$OUT/bzImage" | cut -d' ' -f1)",
    "build_seconds_last_make": $((end - start)),
    "jobs": $JOBS,
}, open(sys.argv[1], "w"), indent=2)
EOF
echo "== $OUT/bzImage ($release), build.json, config =="
