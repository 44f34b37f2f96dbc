package rmqc.driver;

import com.google.gson.JsonObject;

/**
 * One client of the 4.x Java client (rocketmq-client) under a handle of a session: a producer, a transaction
 * producer or a push consumer, each with an MQClientInstance of its own (a unique instanceName), so many
 * clients of one group live in one JVM as they would in many processes. Also the JSON helpers the 4.x mode's
 * files share.
 */
abstract class Remoting4xClient {
    final Remoting4xMode mode;
    final Session session;
    final String handle;
    final String group;

    Remoting4xClient(Remoting4xMode mode, Session session, String handle, String group) {
        this.mode = mode;
        this.session = session;
        this.handle = handle;
        this.group = group;
    }

    /** A clean shutdown (the client's own shutdown: offsets persisted, unregistered). */
    abstract void shutdown();

    /** The closest thing to a crash the client allows; by default not applicable. */
    void crash() {
        throw new NotApplicable("rocketmq-client: a " + getClass().getSimpleName() + " has no crash in this driver");
    }

    void emit(String kind, JsonObject fields) {
        mode.wire.emit(session, kind, fields);
    }

    // ---- JSON helpers ----

    /** {@link Wire#obj}. */
    static JsonObject obj(Object... pairs) {
        return Wire.obj(pairs);
    }

    static String str(JsonObject o, String key) {
        return Wire.str(o, key);
    }

    static String str(JsonObject o, String key, String otherwise) {
        String v = str(o, key);
        return v == null ? otherwise : v;
    }

    static long num(JsonObject o, String key, long otherwise) {
        String v = str(o, key);
        return v == null ? otherwise : (long) Double.parseDouble(v);
    }

    static boolean flag(JsonObject o, String key) {
        return o != null && o.has(key) && !o.get(key).isJsonNull() && o.get(key).getAsBoolean();
    }

    static JsonObject options(JsonObject m) {
        return Wire.options(m);
    }
}
