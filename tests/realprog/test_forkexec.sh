# test_forkexec.sh - a shell loop of 300 fork+execs of /bin/true, without
# and with --follow-children (every /bin/true then starts an agent).
. "$(dirname "$0")/lib.sh"
realprog loop -- sh -c 'for i in $(seq 300); do /bin/true; done; echo "300 done"'
realprog loop-f -f -- sh -c 'for i in $(seq 300); do /bin/true; done; echo "300 done"'
done_tests
