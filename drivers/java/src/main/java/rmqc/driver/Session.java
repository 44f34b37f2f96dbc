package rmqc.driver;

/** A session of the protocol ({@code open} ... {@code close}): the run its events belong to. */
public final class Session {
    public final String name;
    public final String runId;
    public final String profile;
    public final String driverName;

    public Session(String name, String runId, String profile, String driverName) {
        this.name = name;
        this.runId = runId;
        this.profile = profile;
        this.driverName = driverName;
    }
}
