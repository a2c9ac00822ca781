# test_perl.sh - perl's run loop (libperl exports Perl_runops_standard).
. "$(dirname "$0")/lib.sh"
need perl
realprog perl -H 'Perl_runops_standard' -- perl -e '
my %h; my $s = 0;
for my $i (1 .. 400000) { $h{$i % 5000} .= "x"; $s += length(join(",", $i, $i * 2)); }
print "$s ", scalar(keys %h), "\n";'
done_tests
