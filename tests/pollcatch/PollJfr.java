/* SPDX-License-Identifier: Apache-2.0 */
// PollJfr.java - a Java program that records its own "polls" the way
// async-profiler's pollcatch does: after each poll in which it wants the
// decoder to look, it commits a profiler.UserEvent of type
// tokio.PollcatchV1 whose data is the 16-byte little-endian (start, end)
// in the JVM's tick clock (System.nanoTime: JDK 17's JFR ticks are
// nanoseconds on Linux, ticksPerSecond 1e9, and no "clock" setting is
// recorded). Run with -XX:StartFlightRecording; used by
// test_longpolls_jfr.sh.
//
// The main thread runs 40 fast polls and one slow one (slowPoll, burning
// CPU for the time given); a second thread ("bystander") burns CPU in
// otherThreadWork the whole time, never in a poll, so its samples must not
// be attributed to any poll. Prints "slow_ms=<duration of the slow poll>".
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

public class PollJfr {
    @Name("profiler.UserEvent")
    @Label("User Event")
    @StackTrace(false)
    static class UserEvent extends Event {
        @Label("Type") String type;
        @Label("Data") String data;
    }

    static volatile long sink;
    static volatile boolean done;

    static void burn(long nanos) {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) sink += i * 31L;
        }
    }

    static void slowPoll(long ms) { burn(ms * 1_000_000L); }
    static void fastPoll() { burn(200_000L); }
    static void otherThreadWork() { while (!done) burn(1_000_000L); }

    static void emit(long before, long after) {
        byte[] b = new byte[16];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (before >>> (8 * i));
            b[8 + i] = (byte) (after >>> (8 * i));
        }
        UserEvent e = new UserEvent();
        e.type = "tokio.PollcatchV1";
        e.data = new String(b, java.nio.charset.StandardCharsets.ISO_8859_1);
        e.commit();
    }

    public static void main(String[] args) throws Exception {
        long slowMs = Long.parseLong(args[0]);
        Thread other = new Thread(PollJfr::otherThreadWork, "bystander");
        other.start();
        burn(300_000_000L); // warm up: compiled code, sampler running
        double slow = 0;
        for (int i = 0; i < 41; i++) {
            long before = System.nanoTime();
            if (i == 20) slowPoll(slowMs); else fastPoll();
            long after = System.nanoTime();
            if (i == 20) slow = (after - before) / 1e6;
            emit(before, after);
        }
        done = true;
        other.join();
        System.out.printf("slow_ms=%.3f%n", slow);
    }
}
