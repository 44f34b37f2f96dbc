package rmqc.driver;

import com.google.gson.JsonObject;

import java.util.List;

/**
 * One SDK behind the protocol. {@link Wire} answers hello, open, close, now, step, advance and bye itself;
 * every other command of a session comes to {@link #serve}. Reply fields are returned; what the SDK cannot do
 * is a {@link NotApplicable}; any other exception is a RocketMQError with {@link #errorCode}.
 */
public interface Mode {
    /** The SDK's name in the hello (the Maven coordinates' artifact). */
    String driverName();

    /** The SDK's version in the hello. */
    String version();

    /** {@code remoting-4.x} or {@code grpc-5.x}. */
    String profile();

    /** The capabilities this SDK really has (adapters/base.py CAPABILITIES). */
    List<String> capabilities();

    JsonObject serve(Session session, String cmd, JsonObject m) throws Exception;

    /** The RocketMQ status code of an SDK error, or -1 for the SDK's own checks. */
    int errorCode(Throwable e);

    /** The protocol's error type of an SDK error (RocketMQError; BatchRejected, ... where the SDK's error is one). */
    default String errorType(Throwable e) {
        return "RocketMQError";
    }

    /** The error's message as the protocol carries it, or null for the exception's class and message. */
    default String errorMessage(Throwable e) {
        return null;
    }

    /** Shut down every client of the session. */
    void close(Session session);

    /** Shut down every client (bye). */
    void closeAll();
}
