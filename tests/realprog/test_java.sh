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
realprog java -H 'JavaMain' -- java -Xshare:auto -XX:TieredStopAtLevel=1 "$T/Work.java"
done_tests
