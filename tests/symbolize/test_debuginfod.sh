# SPDX-License-Identifier: Apache-2.0
# test_debuginfod.sh - debug files fetched by build id from a real
# debuginfod server (Debian's `debuginfod`, serving the objcopy
# --only-keep-debug files of -O2 C and C++ programs whose profiled copies
# are stripped):
#   - `run` with DEBUGINFOD_URLS: the frames of the stripped programs get
#     the names, lines and inlined frames of the unstripped build;
#   - `symbolize` through debuginfod = `symbolize` from the unstripped
#     files themselves, address for address;
#   - a warm cache needs no server (the server stopped);
#   - a server that accepts and never answers (hang.py), or none at all:
#     the run ends (EMBERPROF_DEBUGINFOD_TIMEOUT bounds it) and says so,
#     the failure is remembered for the next run, and `emberprof
#     symbolize` adds the names later, once a server answers.
# Skipped (77) where debuginfod is not installed.
. "$(dirname "$0")/lib.sh"
need debuginfod

tab=$(printf '\t')
HPID=
trap 'stop_server; [ -n "$HPID" ] && kill "$HPID" 2>/dev/null; rm -rf "$T"' EXIT

build_programs
mkdir -p srv refdir
cp debug/*.debug srv/
for p in sym_c sym_cxx; do # the unstripped files, by build id, for the reference
	id=$(cat "ids/$p")
	mkdir -p "refdir/.build-id/$(echo "$id" | cut -c1-2)"
	cp "bin/$p" "refdir/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
done
export DEBUGINFOD_CACHE_PATH="$T/cache" XDG_CACHE_HOME="$T/xdg"
unset DEBUGINFOD_URLS
start_server

# named: every location of the program's module has a name
all_named() {
	if [ -s "$2" ] && ! grep -q "$tab-\$" "$2"; then
		ok "$1: every location of the program named"
	else
		fail "$1: unnamed locations: $(grep "$tab-\$" "$2" | head -3)"
	fi
}
hot_and_inline() {
	case $1 in
	sym_cxx*)
		has_frame "$1: the method, with file and line" "$2" "symfx::Mixer::run[^;]* [^ ]*sym_cxx\.cpp:[1-9]"
		has_frame "$1: the inlined template as its own frame" "$2" "symfx::step<unsigned long>[^;]*;symfx::Mixer::run"
		;;
	sym_c*)
		has_frame "$1: the hot function, with file and line" "$2" "${tab}sym_hot_loop [^ ]*sym_c\.c:[1-9]"
		has_frame "$1: the inlined call as its own frame" "$2" "${tab}sym_mix [^ ]*sym_c\.c:[1-9][0-9]*;sym_hot_loop "
		;;
	esac
}

for p in sym_c sym_cxx; do
	id=$(cat "ids/$p")
	# the reference: a symbolizing run of the unstripped build
	"$EMBERPROF" run -q -o "ref-$p" -- "bin/$p" 150000000 >/dev/null 2>"ref-$p.err"
	check_exit "$p: the unstripped build" 0 $?
	frames "ref-$p"/*.pb.gz | grep "^$id" >"ref-$p.frames"

	# 1. run of the stripped program with DEBUGINFOD_URLS
	DEBUGINFOD_URLS=$URL "$EMBERPROF" run -q -o "dd-$p" -- "stripped/$p" 150000000 >/dev/null 2>"dd-$p.err"
	check_exit "$p: run, stripped, DEBUGINFOD_URLS" 0 $?
	frames "dd-$p"/*.pb.gz | grep "^$id" >"dd-$p.frames"
	all_named "$p: run with debuginfod" "dd-$p.frames"
	same_frames "$p: run with debuginfod = the unstripped build" "ref-$p.frames" "dd-$p.frames" 3
	hot_and_inline "$p: run with debuginfod" "dd-$p.frames"
	# ... and the JFR recording of such a run: the stripped code, written
	# as addresses, named by the same pass (tools/symbolize/jfr_symbolize.c)
	if ! command -v jfr >/dev/null 2>&1; then
		echo "note: the JDK's jfr is not installed: the JFR run not checked"
	elif [ "${EMBER_TEST_ENGINE:-}" = tree ]; then
		echo "note: --engine tree writes pprof only: the JFR run not checked"
	else
	DEBUGINFOD_URLS=$URL "$EMBERPROF" run -q --format jfr -o "ddj-$p" -- "stripped/$p" 150000000 \
		>/dev/null 2>"ddj-$p.err"
	check_exit "$p: run --format jfr, stripped, DEBUGINFOD_URLS" 0 $?
	python3 "$SYM_SRC/jfr_frames.py" frames "ddj-$p"/*.jfr | grep "^$p$tab" >"ddj-$p.frames"
	if [ -s "ddj-$p.frames" ] && ! grep -q "^$p${tab}0x" "ddj-$p.frames"; then
		ok "$p: JFR with debuginfod: every frame of the program named"
	else
		fail "$p: JFR with debuginfod: addresses left: $(grep "^$p${tab}0x" "ddj-$p.frames" | head -3)"
	fi
	has_frame "$p: JFR with debuginfod: the hot function with its line" "ddj-$p.frames" \
		"^$p${tab}(sym_hot_loop|symfx::Mixer::run[^$tab]*)$tab[1-9]"
	fi
	if [ -s "$T/cache/$id/debuginfo" ]; then
		ok "$p: the debug file in libdebuginfod's cache layout"
	else
		fail "$p: no $T/cache/$id/debuginfo"
	fi

	# 2. symbolize of an addresses-only profile: through debuginfod = from the unstripped file
	"$EMBERPROF" run -q --no-symbolize -o "off-$p" -- "stripped/$p" 150000000 >/dev/null 2>&1
	check_exit "$p: run --no-symbolize" 0 $?
	cp -r "off-$p" "viadd-$p"
	cp -r "off-$p" "viref-$p"
	DEBUGINFOD_URLS=$URL "$EMBERPROF" symbolize -q "viadd-$p"/*.pb.gz 2>"viadd-$p.err"
	check_exit "$p: symbolize through debuginfod" 0 $?
	"$EMBERPROF" symbolize -q --no-debuginfod --debug-dir refdir "viref-$p"/*.pb.gz
	check_exit "$p: symbolize from the unstripped file" 0 $?
	frames "viadd-$p"/*.pb.gz | grep "^$id" >"viadd-$p.frames"
	frames "viref-$p"/*.pb.gz | grep "^$id" >"viref-$p.frames"
	all_named "$p: symbolize through debuginfod" "viadd-$p.frames"
	if cmp -s "viadd-$p.frames" "viref-$p.frames"; then
		ok "$p: symbolize: debuginfod's debug file names every address as the unstripped file does"
	else
		fail "$p: symbolize via debuginfod differs: $(diff "viref-$p.frames" "viadd-$p.frames" | head -4)"
	fi
	hot_and_inline "$p: symbolize through debuginfod" "viadd-$p.frames"
done

# 3. a warm cache needs no server
stop_server
for p in sym_c sym_cxx; do
	id=$(cat "ids/$p")
	DEBUGINFOD_URLS=$URL "$EMBERPROF" run -q -o "warm-$p" -- "stripped/$p" 100000000 >/dev/null 2>"warm-$p.err"
	check_exit "$p: run, server stopped, warm cache" 0 $?
	frames "warm-$p"/*.pb.gz | grep "^$id" >"warm-$p.frames"
	all_named "$p: warm cache, no server" "warm-$p.frames"
	same_frames "$p: warm cache = the unstripped build" "ref-$p.frames" "warm-$p.frames" 3
done

# 4. a server that accepts and never answers; then none at all
python3 "$SYM_SRC/hang.py" >hang.port &
HPID=$!
for _ in $(seq 100); do [ -s hang.port ] && break; sleep 0.1; done
hang=http://127.0.0.1:$(cat hang.port)
export DEBUGINFOD_CACHE_PATH="$T/cache-cold" XDG_CACHE_HOME="$T/xdg-cold"
id=$(cat ids/sym_c)
start=$(date +%s)
DEBUGINFOD_URLS=$hang EMBERPROF_DEBUGINFOD_TIMEOUT=2 "$EMBERPROF" run -q -o hang -- stripped/sym_c 50000000 >/dev/null 2>hang.err
check_exit "a hanging server: the run ends" 0 $?
echo "note: the run took $(($(date +%s) - start)) s with a 2 s debuginfod bound"
check_grep "a hanging server: said" hang.err "debuginfod"
check_grep "a hanging server: the bound named" hang.err "no answer within"
if [ -s "$T/xdg-cold/emberprof/debuginfod-miss/$id" ]; then
	ok "a hanging server: the failure remembered ($(cat "$T/xdg-cold/emberprof/debuginfod-miss/$id"))"
else
	fail "a hanging server: no $T/xdg-cold/emberprof/debuginfod-miss/$id"
fi
frames hang/*.pb.gz | grep "^$id" >hang.frames
if grep -q "$tab-\$" hang.frames; then
	ok "a hanging server: the program's frames stay unnamed"
else
	fail "a hanging server: names from nowhere: $(head -3 hang.frames)"
fi
DEBUGINFOD_URLS=$hang EMBERPROF_DEBUGINFOD_TIMEOUT=2 "$EMBERPROF" run -q -o hang2 -- stripped/sym_c 50000000 >/dev/null 2>hang2.err
check_exit "a hanging server again" 0 $?
check_grep "a hanging server again: not asked, said" hang2.err "not asked: they failed within the last"
kill "$HPID" 2>/dev/null
HPID=

DEBUGINFOD_URLS=http://127.0.0.1:$(free_port) EMBERPROF_DEBUGINFOD_TIMEOUT=2 \
	"$EMBERPROF" run -q -o down -- stripped/sym_cxx 50000000 >/dev/null 2>down.err
check_exit "no server listening: the run ends" 0 $?
check_grep "no server listening: said" down.err "debuginfod:"

# ... and symbolize adds the names later, once a server answers
start_server
DEBUGINFOD_URLS=$URL "$EMBERPROF" symbolize hang/*.pb.gz hang2/*.pb.gz down/*.pb.gz 2>later.err
check_exit "symbolize later" 0 $?
cat later.err
frames hang/*.pb.gz hang2/*.pb.gz | grep "^$(cat ids/sym_c)" >later-c.frames
frames down/*.pb.gz | grep "^$(cat ids/sym_cxx)" >later-cxx.frames
all_named "sym_c: symbolize later" later-c.frames
all_named "sym_cxx: symbolize later" later-cxx.frames
same_frames "sym_c: symbolize later = the unstripped build" ref-sym_c.frames later-c.frames 1
same_frames "sym_cxx: symbolize later = the unstripped build" ref-sym_cxx.frames later-cxx.frames 1
stop_server
done_tests
