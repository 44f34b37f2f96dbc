package rmqc.driver;

/** What the SDK cannot do: the harness counts the test as not applicable, with this message, never passed. */
public final class NotApplicable extends RuntimeException {
    public NotApplicable(String message) {
        super(message);
    }
}
