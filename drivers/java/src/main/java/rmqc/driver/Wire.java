package rmqc.driver;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The driver protocol's wire (spec/schemas/driver-protocol.schema.json): JSON lines, commands on standard
 * input, replies, events and asks on standard output, one line each. The reading thread never blocks on the
 * SDK: every command but {@code answer} and {@code bye} is served on a thread of its own, so the answer a
 * listener or a transaction checker waits for is read while that listener holds its SDK thread.
 */
public final class Wire {
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();

    private final PrintStream out;
    private final Clock clock;
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();
    private final Map<Long, CompletableFuture<JsonObject>> waiting = new ConcurrentHashMap<>();
    private final AtomicLong askIds = new AtomicLong();
    private final AtomicLong seq = new AtomicLong();
    private final ExecutorService workers = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "rmqc-command");
        t.setDaemon(true);
        return t;
    });

    public Wire(PrintStream out, Clock clock) {
        this.out = out;
        this.clock = clock;
    }

    public Clock clock() {
        return clock;
    }

    /** One line out; lines of concurrent writers never interleave. */
    public void write(JsonObject message) {
        String line = GSON.toJson(message);
        synchronized (out) {
            out.print(line);
            out.print('\n');
            out.flush();
        }
    }

    public Session session(String name) {
        Session s = sessions.get(name);
        if (s == null) {
            throw new NotApplicable("no open session named " + name);
        }
        return s;
    }

    /** A row of the event log (spec/schemas/event-log.schema.json) for {@code session}, stamped with spec time;
     * null fields are left out. */
    public void emit(Session session, String kind, JsonObject fields) {
        JsonObject row = new JsonObject();
        row.addProperty("run_id", session.runId);
        row.addProperty("target", session.driverName);
        row.addProperty("profile", session.profile);
        row.addProperty("seq", seq.getAndIncrement());
        row.addProperty("ts_ms", clock.nowMs());
        row.addProperty("kind", kind);
        for (Map.Entry<String, JsonElement> e : fields.entrySet()) {
            if (e.getValue() != null && !e.getValue().isJsonNull()) {
                row.add(e.getKey(), e.getValue());
            }
        }
        JsonObject event = new JsonObject();
        event.add("event", row);
        event.addProperty("target", session.name);
        write(event);
    }

    /** Ask the harness (a consume listener, a transaction checker) and wait for its answer. */
    public JsonObject ask(Session session, JsonObject question) {
        long id = askIds.incrementAndGet();
        CompletableFuture<JsonObject> answer = new CompletableFuture<>();
        waiting.put(id, answer);
        question.addProperty("target", session.name);
        question.addProperty("ask_id", id);
        write(question);
        try {
            return answer.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the answer to ask " + id, e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    /** Read commands until {@code bye} or the end of standard input. */
    public void run(Mode mode) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonObject m = JsonParser.parseString(line).getAsJsonObject();
            String cmd = m.has("cmd") ? m.get("cmd").getAsString() : "";
            if (cmd.equals("answer")) {
                CompletableFuture<JsonObject> f = waiting.remove(m.get("ask_id").getAsLong());
                if (f != null) {
                    f.complete(m);
                }
            } else if (cmd.equals("bye")) { // the commands in flight answer first (a bounded wait), then the clients go
                workers.shutdown();
                workers.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
                mode.closeAll();
                reply(m, new JsonObject());
                break;
            } else {
                workers.submit(() -> serve(mode, m));
            }
        }
    }

    private void serve(Mode mode, JsonObject m) {
        try {
            reply(m, dispatch(mode, m));
        } catch (NotApplicable e) {
            fail(m, "NotApplicable", e.getMessage(), null);
        } catch (Throwable e) {
            String message = mode.errorMessage(e);
            fail(m, mode.errorType(e), message == null ? describe(e) : message, mode.errorCode(e));
        }
    }

    private JsonObject dispatch(Mode mode, JsonObject m) throws Exception {
        String cmd = m.get("cmd").getAsString();
        switch (cmd) {
            case "hello": {
                JsonObject r = new JsonObject();
                r.addProperty("protocol", 1);
                r.addProperty("driver", mode.driverName());
                r.addProperty("version", mode.version());
                r.add("profiles", GSON.toJsonTree(new String[] {mode.profile()}));
                r.addProperty("clock", "wall");
                r.addProperty("time_scale", clock.timeScale);
                return r;
            }
            case "open": {
                String name = m.get("target").getAsString();
                String profile = m.get("profile").getAsString();
                if (!profile.equals(mode.profile())) {
                    throw new NotApplicable(mode.driverName() + " runs profile " + mode.profile() + ", not " + profile);
                }
                String runId = m.has("run_id") ? m.get("run_id").getAsString() : "run";
                sessions.put(name, new Session(name, runId, profile, mode.driverName()));
                JsonObject r = new JsonObject();
                r.add("capabilities", GSON.toJsonTree(mode.capabilities()));
                return r;
            }
            case "close": {
                Session s = sessions.remove(m.get("target").getAsString());
                if (s != null) {
                    mode.close(s);
                }
                return new JsonObject();
            }
            case "now": {
                JsonObject r = new JsonObject();
                r.addProperty("now_ms", clock.nowMs());
                return r;
            }
            case "step": { // a wall clock: things happen by themselves; wait a little towards the deadline
                long deadline = m.has("deadline_ms") ? m.get("deadline_ms").getAsLong() : clock.nowMs();
                long waitMs = Math.max(0, Math.min(clock.wallMs(deadline - clock.nowMs()), 20));
                Thread.sleep(waitMs);
                JsonObject r = new JsonObject();
                long now = clock.nowMs();
                r.addProperty("ran", now < deadline);
                r.addProperty("now_ms", now);
                return r;
            }
            case "advance": {
                long ms = m.has("ms") ? m.get("ms").getAsLong() : m.has("max_ms") ? m.get("max_ms").getAsLong() : 0;
                Thread.sleep(clock.wallMs(ms));
                JsonObject r = new JsonObject();
                r.addProperty("now_ms", clock.nowMs());
                return r;
            }
            default:
                return mode.serve(session(m.get("target").getAsString()), cmd, m);
        }
    }

    private void reply(JsonObject m, JsonObject fields) {
        JsonObject r = new JsonObject();
        r.addProperty("reply", m.get("id").getAsLong());
        r.addProperty("ok", true);
        for (Map.Entry<String, JsonElement> e : fields.entrySet()) {
            r.add(e.getKey(), e.getValue());
        }
        write(r);
    }

    private void fail(JsonObject m, String type, String message, Integer code) {
        JsonObject error = new JsonObject();
        error.addProperty("type", type);
        error.addProperty("message", message == null ? type : message);
        if (code != null) {
            error.addProperty("code", code);
        }
        JsonObject r = new JsonObject();
        r.addProperty("reply", m.get("id").getAsLong());
        r.addProperty("ok", false);
        r.add("error", error);
        write(r);
    }

    private static String describe(Throwable e) {
        String text = e.getClass().getSimpleName() + ": " + e.getMessage();
        return text.length() > 2000 ? text.substring(0, 2000) : text;
    }

    public static Gson gson() {
        return GSON;
    }

    // ---- the messages' JSON, shared by every mode ----

    /** An object of the non-null pairs {@code key, value, key, value, ...}, each typed by its value (a JSON
     * element as it is, numbers, booleans, anything else as its text); a Map value becomes an object of strings. */
    public static JsonObject obj(Object... pairs) {
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

    /** A member's text (a primitive's value, anything else as JSON); null when absent or null. */
    public static String str(JsonObject o, String key) {
        if (o == null || !o.has(key) || o.get(key).isJsonNull()) {
            return null;
        }
        JsonElement e = o.get(key);
        return e.isJsonPrimitive() ? e.getAsString() : e.toString();
    }

    /** A command's {@code options} object; empty when it has none. */
    public static JsonObject options(JsonObject m) {
        return m.has("options") && m.get("options").isJsonObject() ? m.getAsJsonObject("options") : new JsonObject();
    }
}
