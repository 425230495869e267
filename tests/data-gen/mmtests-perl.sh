#!/bin/bash
# What mmtests' own Perl extracts from the bundled mmtests trees, for tests/test_mmtests_logs.py.
#
# Usage: tests/data-gen/mmtests-perl.sh OLD NEW
#   OLD: a checkout of gormanm/mmtests at b0b1d143bba3c6e0bb28995997bfe1db96b37779 (2023-04-26,
#        the last commit with ExtractThpscale/Pft/Pfttime.pm, read the 2020 trees)
#   NEW: a checkout at 638401e07e70d67fa5a1e6295e1315ae0af831b2 (2026-06-25, current
#        shellpack parse-results of stutterp and usemem)
# Needs perl with YAML::PP and File::Slurp (Debian: libyaml-pp-perl libfile-slurp-perl).
# List::BinarySearch is not packaged in Debian; perl/List/BinarySearch.pm here stands in for
# the one function mmtests' Stat.pm imports (not used by extraction).
# Writes tests/data/mmtests-perl/*.txt: extract-mmtests.pl's per-sample lines
# ("<row> <iteration> <sample> <value>") as mmtests prints them; for the large 06-03 thpscale
# run (180,000 faults, 15 MB printed) only "<row> <samples> <sum of printed values>" per row,
# summed by awk from mmtests' printed lines.
set -euo pipefail
OLD=$(realpath "$1")
NEW=$(realpath "$2")
HERE=$(dirname "$(realpath "$0")")
REPO=$(realpath "$HERE/../..")
OUT=$REPO/tests/data/mmtests-perl
mkdir -p "$OUT"
export PERL5LIB=$HERE/perl

extract() { # mmtests-dir work-log-dir run-name benchmark output [extract-mmtests.pl options]
	(cd "$2" && perl "$1/bin/extract-mmtests.pl" -d . -n "$3" -b "$4" "${@:6}") > "$OUT/$5.txt"
}

CI=$REPO/data/mmtests-ci/work
MORE=$REPO/data/mmtests-ci-more/work
for RUN in log.ltccip8.2020-06-12_1807 log.ltccip8.2020-06-14_0656 log.ltccip8.2020-06-03_1400; do
	extract "$OLD" "$MORE/$RUN" thpscale thpscale "$RUN-thpscale"
	extract "$OLD" "$MORE/$RUN" thpscale thpscale "$RUN-thpscalecounts" -a counts
	extract "$OLD" "$MORE/$RUN" performance pft "$RUN-pft"
	extract "$OLD" "$MORE/$RUN" performance pft "$RUN-pfttime" -a time
	extract "$OLD" "$CI/$RUN" usemem-stress-numa-compact usemem "$RUN-usemem"
done
BIG=$OUT/log.ltccip8.2020-06-03_1400-thpscale
awk '{n[$1]++; s[$1]+=$4} END {for (r in n) printf "%s %d %.2f\n", r, n[r], s[r]}' "$BIG.txt" |
	sort > "$BIG-sums.txt"
rm "$BIG.txt"
FORMATS=$REPO/data/mmtests-formats/work/log
extract "$OLD" "$FORMATS" stutterp-mmap-latency stutterp stutterp-old
extract "$NEW" "$FORMATS" stutterp-mmap-latency stutterp stutterp-new
extract "$NEW" "$FORMATS" usemem-time-names usemem usemem-time-new
# The generic path: aim9 through current mmtests' parse-results (raw) and its extraction.
AIM9=$REPO/data/mmtests-ci-more/work/log.ltccip8.2020-06-12_1807
"$NEW/shellpack_src/src/aim9/parse-results" "$AIM9/performance/iter-0/aim9/logs" \
	> "$OUT/aim9-parse-results.txt"
extract "$NEW" "$AIM9" performance aim9 aim9-new
# compare-mmtests.pl's summary of the A/A thpscale and pft pairs (base = 06-12). Its
# significance markers call R (not installed here: "R: not found" on stderr), so tests use
# the values and % columns only.
PAIR=$(mktemp -d)
trap 'rm -rf "$PAIR"' EXIT
for BENCH in thpscale:thpscale performance:pft; do
	DIR=${BENCH%%:*}
	mkdir -p "$PAIR/$DIR"
	ln -s "$MORE/log.ltccip8.2020-06-12_1807/$DIR" "$PAIR/$DIR/base"
	ln -s "$MORE/log.ltccip8.2020-06-14_0656/$DIR" "$PAIR/$DIR/new"
	(cd "$PAIR/$DIR" && perl "$OLD/bin/compare-mmtests.pl" -d . -b "${BENCH##*:}" -n base,new 2>/dev/null) \
		> "$OUT/compare-${BENCH##*:}.txt"
done
# pagealloc and hpagealloc: fixtures written from their printf formats (no public tree).
extract "$OLD" "$FORMATS" pagealloc-printf pagealloc pagealloc-old
extract "$OLD" "$FORMATS" hpagealloc-printf hpagealloc hpagealloc-old
# thpchallenge (current shellpack, legacy parse-results): mmtests' own program, run here.
for RUN in thpchallenge-madvhugepage thpchallenge-default; do
	extract "$NEW" "$FORMATS" "$RUN" thpchallenge "$RUN-new"
	extract "$NEW" "$FORMATS" "$RUN" thpchallenge "$RUN-counts-new" -a counts
done
