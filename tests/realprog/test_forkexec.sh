# SPDX-License-Identifier: Apache-2.0
# test_forkexec.sh - a shell loop of 300 fork+execs of /bin/true, then 10
# of them with --follow-children. The whole tree is profiled by default
#: every /bin/true loads the library too; a process too short
# for a sample may write nothing, so neither run needs a profile.
. "$(dirname "$0")/lib.sh"
# the shell itself uses a few ms of CPU: at 100 Hz it may have no sample
realprog loop -e -- sh -c 'for i in $(seq 300); do /bin/true; done; echo "300 done"'
realprog loop-f -e -f -- sh -c 'for i in $(seq 10); do /bin/true; done; echo "10 done"'
done_tests
