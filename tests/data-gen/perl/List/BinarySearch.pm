package List::BinarySearch;
# Minimal stand-in for the CPAN module (not packaged in Debian): binsearch_range only.
use strict;
use Exporter 'import';
our @EXPORT_OK = qw(binsearch_range);
sub binsearch_range(&$$\@) {
	my ($code, $low, $high, $aref) = @_;
	my ($lo, $hi) = (0, -1);
	$lo++ while $lo < @$aref && $aref->[$lo] < $low;
	$hi = $#$aref; $hi-- while $hi >= 0 && $aref->[$hi] > $high;
	return ($lo, $hi);
}
1;
