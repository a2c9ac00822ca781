# SPDX-License-Identifier: Apache-2.0
# test_git.sh - git init, add, commit and log in a fresh repository, with
# fixed names and dates (so the commit ids are the same every run). The
# files are 0.2-1.3 MB, so that some of git's processes use tens of
# milliseconds of CPU each: with a few KB each, the children's 0.3 s was
# spread over some 25 git processes, and under `run -f` at 100 Hz (lazily
# started agents, which
# do not sample a process's first 2 ms and their own start) one or two runs
# in ten took no sample at all and wrote no profile (CI saw it once).
. "$(dirname "$0")/lib.sh"
need git
export GIT_AUTHOR_NAME=ember GIT_AUTHOR_EMAIL=ember@example.invalid GIT_AUTHOR_DATE='2026-01-01T00:00:00Z'
export GIT_COMMITTER_NAME=ember GIT_COMMITTER_EMAIL=ember@example.invalid GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
export GIT_CONFIG_NOSYSTEM=1 HOME=$T
realprog git -f -- sh -c '
git init -q -b main repo && cd repo &&
for i in 1 2 3 4 5; do seq $((i * 40000)) >f$i; git add f$i; git commit -q -m "commit $i"; done &&
git log --format="%H %s" && git gc -q && git fsck -q && git rev-list --count HEAD'
done_tests
