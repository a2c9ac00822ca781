# SPDX-License-Identifier: Apache-2.0
# test_node.sh - node (V8: JIT code, its own threads, its signal handlers).
. "$(dirname "$0")/lib.sh"
need node
realprog node -- node -e '
let s = 0; const m = new Map();
for (let i = 0; i < 2000000; i++) { s = (s + i * i) % 1000003; if (i % 7 === 0) m.set(i % 10007, String(i)); }
console.log(s, m.size);'
done_tests
