package rmqc.driver;

/**
 * Spec time of the run. The SDK runs on the wall clock; spec time = (CLOCK_MONOTONIC seconds - epoch) / time
 * scale, where epoch is a Python {@code time.monotonic()} value of the harness (the same clock as
 * {@link System#nanoTime()} on Linux). A duration the harness gives in spec ms reaches the server as
 * {@code ms * wireScale} (1 for rmqc serve, which reads spec ms; the time scale for a real release whose clocks
 * the harness compressed through its keys); a delivery timestamp T as {@code timestampBaseMs + T * wireScale}.
 */
public final class Clock {
    public final double timeScale;
    public final double epochS;
    public final double wireScale;
    public final long timestampBaseMs;

    public Clock(double timeScale, Double epochS, double wireScale, Long timestampBaseMs) {
        this.timeScale = timeScale;
        this.epochS = epochS == null ? monotonicS() : epochS;
        this.wireScale = wireScale;
        this.timestampBaseMs = timestampBaseMs == null ? System.currentTimeMillis() : timestampBaseMs;
    }

    public static double monotonicS() {
        return System.nanoTime() / 1e9;
    }

    /** Spec ms since the harness's epoch. */
    public long nowMs() {
        return (long) Math.floor((monotonicS() - epochS) * 1000 / timeScale);
    }

    /** Wall ms that a span of spec ms lasts here. */
    public long wallMs(long specMs) {
        return Math.round(specMs * timeScale);
    }

    /** A duration in spec ms as the server takes it. */
    public long wireMs(long specMs) {
        return Math.round(specMs * wireScale);
    }

    /** A delivery timestamp of spec time {@code specMs}, on the server's clock. */
    public long wireTimestamp(long specMs) {
        return timestampBaseMs + Math.round(specMs * wireScale);
    }
}
