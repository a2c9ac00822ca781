# SPDX-License-Identifier: Apache-2.0
# test_java.sh - the JVM (many threads, SIGSEGV-based safepoints, its own
# signal handlers), running a single-file source program.
. "$(dirname "$0")/lib.sh"
need java
cat >"$T/Work.java" <<'JEOF'
import java.util.*;
public class Work {
    public static void main(String[] a) {
        long s = 0; Map<Integer, String> m = new HashMap<>();
        for (int i = 0; i < 3000000; i++) { s = (s + (long) i * i) % 1000003; if (i % 5 == 0) m.put(i % 20011, Integer.toString(i)); }
        System.out.println(s + " " + m.size());
    }
}
JEOF
# The hot name is the entry of every JVM thread, a local symbol of
# libjvm.so's .symtab, reached only by unwinding through libjvm to libc's
# start_thread: about 30 samples a run. Not the launcher's JavaMain: an
# unwinder stops at the main thread's Java frames, so only the JVM's
# start-up (one 10 ms sample at 100 Hz) is under JavaMain in the default
# engine, and 1 run in 12 had none.
realprog java -H 'thread_native_entry' -- java -Xshare:auto -XX:TieredStopAtLevel=1 "$T/Work.java"
done_tests
