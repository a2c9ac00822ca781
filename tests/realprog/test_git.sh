# test_git.sh - git init, add, commit and log in a fresh repository, with
# fixed names and dates (so the commit ids are the same every run).
. "$(dirname "$0")/lib.sh"
need git
export GIT_AUTHOR_NAME=ember GIT_AUTHOR_EMAIL=ember@example.invalid GIT_AUTHOR_DATE='2026-01-01T00:00:00Z'
export GIT_COMMITTER_NAME=ember GIT_COMMITTER_EMAIL=ember@example.invalid GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
export GIT_CONFIG_NOSYSTEM=1 HOME=$T
realprog git -f -- sh -c '
git init -q -b main repo && cd repo &&
for i in 1 2 3 4 5; do seq $((i * 1000)) >f$i; git add f$i; git commit -q -m "commit $i"; done &&
git log --format="%H %s" && git gc -q && git fsck -q && git rev-list --count HEAD'
done_tests
