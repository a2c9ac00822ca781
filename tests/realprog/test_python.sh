# SPDX-License-Identifier: Apache-2.0
# test_python.sh - python3 directly, and through a shell wrapper that execs
# it as pyenv's shims do (with --follow-children, so python is profiled).
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "$PY not installed: skipped"; exit 77; }
# About 0.3 s of CPU (30 samples at the default rate): a script of a
# few samples tests luck, not the profile.
cat >"$T/work.py" <<'PYEOF'
import hashlib
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
h = hashlib.sha256()
for i in range(400000):
    h.update(str(i * i).encode())
print(fib(29), h.hexdigest(), sorted(str(i) for i in range(200000))[-1])
PYEOF
realprog python3 -H '_PyEval_EvalFrameDefault' -- "$PY" "$T/work.py"
cat >"$T/shim" <<EOF2
#!/bin/sh
# like a pyenv shim: find the interpreter, then exec it
set -e
program=python3
exec "$PY" "\$@"
EOF2
chmod +x "$T/shim"
realprog python3-shim -f -H '_PyEval_EvalFrameDefault' -- "$T/shim" "$T/work.py"
done_tests
