# test_forkexec.sh - a shell loop of 300 fork+execs of /bin/true; then 10
# of them with --follow-children (every /bin/true starts an agent and
# writes a profile, ~0.2 s each on this machine: 300 would not fit CI).
. "$(dirname "$0")/lib.sh"
# the shell itself uses a few ms of CPU: at 100 Hz it may have no sample
realprog loop -e -- sh -c 'for i in $(seq 300); do /bin/true; done; echo "300 done"'
realprog loop-f -f -- sh -c 'for i in $(seq 10); do /bin/true; done; echo "10 done"'
done_tests
