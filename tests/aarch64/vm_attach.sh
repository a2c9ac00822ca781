#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# vm_attach.sh [BUILD-DIR]: runs `emberprof attach --wall` of the aarch64
# build for real, in an arm64 Linux booted under qemu-system-aarch64
# (full-system emulation: qemu-user, the aarch64 test stage, cannot
# ptrace another process). Not part of the default CI run (minutes of
# emulation, and it needs an arm64 kernel this project does not ship).
#
# Needs, and exits 77 with the reason when one is missing (it downloads
# nothing):
#   EMBER_AARCH64_VM_KERNEL   an arm64 Linux kernel image (e.g. Debian's
#                             linux-image-*-arm64 package's
#                             /boot/vmlinuz-*, extracted with dpkg-deb -x)
#   EMBER_AARCH64_VM_BUSYBOX  a static arm64 busybox (e.g. /bin/busybox
#                             of Debian's busybox-static:arm64 package,
#                             extracted with dpkg-deb -x)
#   qemu-system-aarch64 (Debian's qemu-system-arm), python3, gzip, and the
#   cross sysroot /usr/aarch64-linux-gnu (gcc-aarch64-linux-gnu) for the
#   arm64 glibc.
#   BUILD-DIR (default build-aarch64): an aarch64 build (as
#   scripts/test-aarch64.sh configures it) holding the targets
#   emberprof_cli, emberprof and ember_attach_work.
#
# In the VM, /init starts tests/attach/attach_work in its blocked mode
# (threads waiting in read, nanosleep, epoll_wait and a condition
# variable, as tests/attach/test_attach_wall.sh runs it), attaches with
# --wall for 1s, shows the target's threads and SigCgt before and after,
# the files written and `emberprof top` of the wall profile, then
# releases the target, which reports whether any waiting call returned
# EINTR. This script then checks the console log for each step's line.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-aarch64}
skip() { echo "vm_attach: skipped: $*"; exit 77; }

K=${EMBER_AARCH64_VM_KERNEL:-}
BB=${EMBER_AARCH64_VM_BUSYBOX:-}
[ -n "$K" ] || skip "EMBER_AARCH64_VM_KERNEL (an arm64 vmlinuz) is not set"
[ -r "$K" ] || skip "EMBER_AARCH64_VM_KERNEL=$K is not a readable file"
[ -n "$BB" ] || skip "EMBER_AARCH64_VM_BUSYBOX (a static arm64 busybox) is not set"
[ -x "$BB" ] || skip "EMBER_AARCH64_VM_BUSYBOX=$BB is not an executable file"
for t in qemu-system-aarch64 python3 gzip aarch64-linux-gnu-readelf timeout; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"
done
SYS=/usr/aarch64-linux-gnu/lib
[ -r "$SYS/ld-linux-aarch64.so.1" ] || skip "no arm64 glibc in $SYS (gcc-aarch64-linux-gnu)"
WORK=$B/tests/attach/ember_attach_work
for f in "$B/emberprof" "$B/libemberprof.so" "$WORK"; do
	[ -x "$f" ] || [ -r "$f" ] || skip "$f not built (cmake --build $B --target emberprof_cli emberprof ember_attach_work)"
done
aarch64-linux-gnu-readelf -h "$B/emberprof" 2>/dev/null | grep -q AArch64 ||
	skip "$B/emberprof is not an aarch64 build"

T=$(mktemp -d "${TMPDIR:-/tmp}/ember-vm.XXXXXX")
trap 'rm -rf "$T"' EXIT
R=$T/root
mkdir -p "$R"/{bin,lib,opt/ember,proc,sys,dev,tmp,run}
cp "$BB" "$R/bin/busybox"
for a in sh mount mkdir cat ls grep sed sleep echo poweroff mkfifo sync head tr printf uname; do
	ln -s busybox "$R/bin/$a"
done
cp "$B/emberprof" "$WORK" "$R/opt/ember/"
# attach --alloc: tests/attach/alloc_work, its library and its late one
AW=$B/tests/attach/ember_alloc_work
ALLOC=0
if [ -x "$AW" ] && [ -r "$B/tests/attach/libember_alloc_work_lib.so" ] &&
	[ -r "$B/tests/attach/libember_alloc_work_late.so" ]; then
	cp "$AW" "$R/opt/ember/"
	cp -L "$B/tests/attach/libember_alloc_work_lib.so" "$R/lib/"
	cp -L "$B/tests/attach/libember_alloc_work_late.so" "$R/opt/ember/"
	ALLOC=1
else
	echo "vm_attach: note: ember_alloc_work not built: the --alloc run is left out"
fi
cp -L "$B/libemberprof.so" "$R/opt/ember/libemberprof.so"
# the libraries the binaries need (NEEDED, followed), from the cross
# sysroot's glibc or the multiarch arm64 packages; and the ones they
# dlopen: libgcc_s (glibc: thread cancellation, backtraces), zlib
# (emberprof reads profiles with it) and, when libdw1:arm64 is installed,
# libdw (the agent names functions with it; without it the profiles hold
# addresses only and the check of names is left out)
LIBDIRS="$SYS /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu"
find_lib() { for d in $LIBDIRS; do [ -e "$d/$1" ] && { echo "$d/$1"; return 0; }; done; return 1; }
add_lib() { # add_lib NAME: copies it and what it needs, once
	[ -e "$R/lib/$1" ] && return 0
	f=$(find_lib "$1") || { echo "vm_attach: $1 not in $LIBDIRS"; exit 1; }
	cp -L "$f" "$R/lib/$1"
	for n in $(aarch64-linux-gnu-readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		add_lib "$n"
	done
}
find_lib libz.so.1 >/dev/null || skip "no arm64 libz.so.1 (zlib1g:arm64) for emberprof top"
for l in ld-linux-aarch64.so.1 libgcc_s.so.1 libz.so.1 \
	$(for f in "$R"/opt/ember/*; do aarch64-linux-gnu-readelf -d "$f"; done |
		sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u); do
	add_lib "$l"
done
NAMES=0
find_lib libdw.so.1 >/dev/null && { add_lib libdw.so.1; NAMES=1; }
ln -s lib "$R/lib64"

cat >"$R/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
export PATH=/bin:/opt/ember
cd /tmp
echo "VM: kernel $(uname -r) $(uname -m), ptrace_scope $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)"
# start MODE LOG: attach_work MODE, its stdin the FIFO ctl (held open on
# fd 3); TPID set once it is ready. finish NAME: "release", then what it
# says and its exit status.
start() {
	rm -f ctl state
	mkfifo ctl
	/opt/ember/ember_attach_work "$1" state <ctl >"$2" 2>&1 &
	TPID=$!
	exec 3>ctl
	n=0
	while ! grep -q ready state 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
}
finish() {
	echo release >&3
	n=0
	while ! grep -q done state 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	echo "VM: $1 says: $(grep done state)"
	exec 3>&-
	wait $TPID
	echo "VM: $1 exit status $?"
}
start blocked target.out
holdings() { ls /proc/$TPID/task | tr '\n' ' '; echo; grep SigCgt /proc/$TPID/status; }
holdings >before
echo "VM: before: $(cat before | tr '\n' ' ')"
emberprof attach --wall --log-level info --duration 1s -o /tmp/out $TPID >err 2>&1
echo "VM: attach exit status $?"
sed 's/^/VM: attach: /' err
holdings >after
echo "VM: after: $(cat after | tr '\n' ' ')"
if [ "$(cat before)" = "$(cat after)" ]; then echo "VM: threads and SigCgt as before"; else echo "VM: threads or SigCgt changed"; fi
echo "VM: state $(sed 's/.*) \(.\).*/\1/' /proc/$TPID/stat)"
echo "VM: files: $(ls /tmp/out | tr '\n' ' ')"
for f in /tmp/out/*wall*.pb.gz; do
	[ -e "$f" ] || continue
	emberprof top "$f" 2>&1 | head -30 | sed 's/^/VM: top: /'
done
# again: the library loaded already, its agent stopped: started again
emberprof attach -q --wall --duration 300ms -o /tmp/again $TPID >again.err 2>&1
echo "VM: second attach exit status $?"
sed 's/^/VM: second attach: /' again.err
echo "VM: second files: $(ls /tmp/again | tr '\n' ' ')"
holdings >after2
if [ "$(cat before)" = "$(cat after2)" ]; then echo "VM: second: threads and SigCgt as before"; else echo "VM: second: threads or SigCgt changed"; fi
finish target
grep 'wall clock' target.out | tail -1 | sed 's/^/VM: target log: /'
# a target whose one thread waits in epoll_wait: borrowed there, its
# -EINTR at the stop made a restart (with the epoll descriptor /proc
# showed before the stop)
start epoll target2.out
echo "VM: epoll target: $(cat /proc/$TPID/syscall)"
emberprof attach -q --wall --duration 300ms -o /tmp/epoll $TPID >epoll.err 2>&1
echo "VM: epoll attach exit status $?"
sed 's/^/VM: epoll attach: /' epoll.err
echo "VM: epoll target after: $(cat /proc/$TPID/syscall)"
finish "epoll target"
# attach --alloc: the program's GOT entries of malloc & co patched while
# attached, a library dlopen'ed meanwhile patched at the next window,
# every entry back at detach, no block corrupted
if [ -x /opt/ember/ember_alloc_work ]; then
	rm -f ctl state
	mkfifo ctl
	/opt/ember/ember_alloc_work state /opt/ember/libember_alloc_work_late.so <ctl >alloc.stdout 2>alloc.out &
	TPID=$!
	exec 3>ctl
	n=0
	while ! grep -q ready state 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	echo "VM: alloc target: $(grep ready state)"
	emberprof attach --alloc=4096 --interval 200ms --log-level info -o /tmp/alloc $TPID >alloc.err 2>&1 &
	EPID=$!
	n=0
	while ! grep -q "slots patched" alloc.out 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	echo late >&3
	n=0
	while ! grep -q "more slots patched" alloc.out 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	echo check >&3
	n=0
	while ! grep -q "^check" state 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	echo "VM: alloc attached: $(grep '^late' state) $(grep '^check' state)"
	kill -INT $EPID
	wait $EPID
	echo "VM: alloc attach exit status $?"
	grep -E "GOT|slots patched|alloc_work" alloc.out | sed 's/^/VM: alloc target log: /'
	for f in /tmp/alloc/*.memory.pb.gz; do
		[ -e "$f" ] || continue
		emberprof top "$f" 2>&1 | head -12 | sed 's/^/VM: alloc top: /'
	done
	grep -E "alloc_work|libc" /proc/$TPID/maps | sed 's/^/VM: alloc maps: /'
	echo stop >&3
	n=0
	while ! grep -q "^done" state 2>/dev/null && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	echo "VM: alloc target says: $(grep '^done' state)"
	exec 3>&-
	wait $TPID
	echo "VM: alloc target exit status $?"
	grep "GOT entry at" alloc.out | sed 's/^/VM: alloc: /'
fi
echo "VM: end"
sync
poweroff -f
EOF
chmod +x "$R/init"
# the initramfs: a cpio archive in the kernel's "newc" format
python3 - "$R" <<'PY' | gzip -1 >"$T/initrd.cpio.gz" || exit 1
import os, stat, sys
root, out, ino = sys.argv[1], sys.stdout.buffer, 1
def entry(name, st, data):
    global ino
    hdr = "070701" + "".join("%08X" % v for v in (
        ino, st.st_mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0))
    ino += 1
    b = hdr.encode() + name.encode() + b"\0"
    out.write(b + b"\0" * (-len(b) % 4) + data + b"\0" * (-len(data) % 4))
for d, dirs, files in os.walk(root):
    dirs.sort()
    for n in sorted(dirs) + sorted(files):
        p = os.path.join(d, n)
        st = os.lstat(p)
        name = os.path.relpath(p, root)
        if stat.S_ISLNK(st.st_mode):
            data = os.readlink(p).encode()
        elif stat.S_ISREG(st.st_mode):
            data = open(p, "rb").read()
        else:
            data = b""
        entry(name, st, data)
entry("TRAILER!!!", os.lstat(root), b"")
PY

LOG=${EMBER_VM_LOG:-$T/console.log}
echo "vm_attach: booting $K (timeout 600 s)"
timeout 600 qemu-system-aarch64 -M virt -cpu cortex-a57 -m 1024 -nographic -no-reboot -nic none \
	-kernel "$K" -initrd "$T/initrd.cpio.gz" \
	-append "console=ttyAMA0 rdinit=/init panic=-1 quiet" </dev/null >"$LOG" 2>&1
qrc=$?
tr -d '\r' <"$LOG" | grep '^VM: '
fails=0
chk() { if tr -d '\r' <"$LOG" | grep "$2" >/dev/null; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi; }
# (grep reads to the end: with pipefail, grep -q leaving early made tr die of
# SIGPIPE and a line that is there read as missing)
[ $qrc -eq 124 ] && { echo "not ok - the VM did not power off within 600 s"; fails=$((fails + 1)); }
chk "the VM ran /init" '^VM: kernel'
chk "attach --wall exited 0" '^VM: attach exit status 0'
chk "the agent started in the target" 'VM: attach: .*agent started'
chk "threads and SigCgt as before" '^VM: threads and SigCgt as before'
chk "a wall profile written" '^VM: files: .*wall.*\.pb\.gz'
chk "emberprof top reads the wall profile" '^VM: top: Total wall: [0-9.]*[1-9][0-9.]*s in 1 profile'
chk "a second attach exited 0" '^VM: second attach exit status 0'
chk "the second attach wrote a wall profile" '^VM: second files: .*wall.*\.pb\.gz'
chk "threads and SigCgt as before after the second" '^VM: second: threads and SigCgt as before'
chk "no waiting call returned EINTR" '^VM: target says: done ok'
chk "the target exited 0" '^VM: target exit status 0'
chk "attach to a thread in epoll_wait exited 0" '^VM: epoll attach exit status 0'
chk "its epoll_wait did not return EINTR" '^VM: epoll target says: done ok'
chk "the epoll target exited 0" '^VM: epoll target exit status 0'
if [ $ALLOC = 1 ]; then
	chk "attach --alloc exited 0" '^VM: alloc attach exit status 0'
	chk "--alloc: every GOT entry changed while attached, the late library's too" '^VM: alloc attached: late \([0-9]*\) check changed=\1/\1'
	chk "--alloc: the agent restored every entry it patched" 'VM: alloc target log: .*allocation profiling: \([0-9]*\) of the \1 GOT entries patched restored'
	chk "--alloc: a memory profile read by emberprof top" '^VM: alloc top: Total'
	chk "--alloc: after detach every entry as before, no block corrupted" '^VM: alloc target says: done restored=\([0-9]*\)/\1 bad=0'
	chk "--alloc: the target exited 0" '^VM: alloc target exit status 0'
fi
if [ $NAMES = 1 ]; then
	chk "the wall profile names the waiting threads' functions" '^VM: top: .* blk_read'
else
	echo "# no libdw.so.1 for arm64 (libdw1:arm64): the profiles' function names not checked"
fi
if [ $fails -ne 0 ]; then
	echo "vm_attach: $fails check(s) failed; the console log:"
	tr -d '\r' <"$LOG" | tail -80
	exit 1
fi
echo "vm_attach: all checks passed"
