package rmqc.driver;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import java.util.Map;

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

    /** An object of the non-null pairs {@code key, value, key, value, ...}; a Map value becomes an object of strings. */
    static JsonObject obj(Object... pairs) {
        JsonObject o = new JsonObject();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            Object v = pairs[i + 1];
            String k = (String) pairs[i];
            if (v == null) {
                continue;
            }
            if (v instanceof JsonElement) {
                o.add(k, (JsonElement) v);
            } else if (v instanceof Number) {
                o.addProperty(k, (Number) v);
            } else if (v instanceof Boolean) {
                o.addProperty(k, (Boolean) v);
            } else if (v instanceof Map) {
                JsonObject d = new JsonObject();
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (e.getValue() != null) {
                        d.addProperty(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
                    }
                }
                o.add(k, d);
            } else {
                o.addProperty(k, String.valueOf(v));
            }
        }
        return o;
    }

    static String str(JsonObject o, String key) {
        if (o == null || !o.has(key) || o.get(key).isJsonNull()) {
            return null;
        }
        JsonElement e = o.get(key);
        return e.isJsonPrimitive() ? e.getAsString() : e.toString();
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
        return m.has("options") && m.get("options").isJsonObject() ? m.getAsJsonObject("options") : new JsonObject();
    }
}
