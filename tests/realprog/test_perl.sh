# SPDX-License-Identifier: Apache-2.0
# test_perl.sh - perl's run loop (libperl exports Perl_runops_standard).
# About 0.4 s of CPU: at the default 100 Hz some 40 samples, every one in
# the run loop (0.07 s, as it was, left 7, and CI once saw none there).
. "$(dirname "$0")/lib.sh"
need perl
realprog perl -H 'Perl_runops_standard' -- perl -e '
my %h; my $s = 0;
for my $i (1 .. 3000000) { $h{$i % 5000} .= "x"; $s += length(join(",", $i, $i * 2)); }
print "$s ", scalar(keys %h), "\n";'
done_tests
