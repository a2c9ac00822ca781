# SPDX-License-Identifier: Apache-2.0
# test_exe_alias.sh - a program run by a symbolic link is named by the path
# it ran, as its profile files are (redis-server -> redis-check-rdb): the
# tree engine's main mapping carries the link's path and the file's own
# build id, and the profile's comment names the file. Two ways a link is
# found: beside its target under the name the kernel gave the process, and
# as an absolute argv[0] elsewhere. Skipped (77) where the run does not
# pick the tree engine.
. "$(dirname "$0")/lib.sh"
need dd
unset EMBERPROF_ENGINE
"$EMBERPROF" run -q --log-level info -o probe -- true >/dev/null 2>probe.err
grep -q "engine: the tree engine" probe.err ||
	{ echo "plain run does not use the tree engine here: $(grep engine: probe.err)"; exit 77; }

mkdir bin other
cp "$(command -v dd)" bin/dd
ln -s dd bin/zero-reader             # beside its target
ln -s "$T/bin/dd" other/zero-copier  # elsewhere: found by argv[0]
id=$(python3 - "$T/bin/dd" <<'PY'
import sys
# the GNU build id note of an ELF file, as hex
data = open(sys.argv[1], "rb").read()
i = data.find(b"GNU\0")
while i >= 0:
    namesz, descsz, typ = (int.from_bytes(data[i - 12 + k:i - 8 + k], "little") for k in (0, 4, 8))
    if namesz == 4 and typ == 3 and descsz == 20:
        print(data[i + 4:i + 24].hex())
        break
    i = data.find(b"GNU\0", i + 1)
PY
)
for link in bin/zero-reader other/zero-copier; do
	rm -rf out
	"$EMBERPROF" run -q -o out -- "$T/$link" if=/dev/zero of=/dev/null bs=64k count=400000 >run.out 2>run.err
	check_exit "$link" 0 $?
	raw=$(go tool pprof -raw out/*.pb.gz 2>/dev/null)
	main=$(echo "$raw" | sed -n '/^Mappings/{n;p;}')
	case $main in
	*" $T/$link $id "*) ok "$link: the main mapping is the link's path with dd's build id" ;;
	*) fail "$link: main mapping '$main', expected $T/$link with build id $id" ;;
	esac
	go tool pprof -comments out/*.pb.gz 2>/dev/null | grep -qF "$T/$link: the file $T/bin/dd" &&
		ok "$link: the comment names the file" ||
		fail "$link: comments: $(go tool pprof -comments out/*.pb.gz 2>&1)"
	case $(ls out) in
	zero-*) ok "$link: files named after the link" ;;
	*) fail "$link: files $(ls out)" ;;
	esac
done
done_tests
