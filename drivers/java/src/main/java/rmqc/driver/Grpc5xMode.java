package rmqc.driver;

import com.google.gson.JsonObject;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The official Java 5.x client {@code org.apache.rocketmq:rocketmq-client-java} behind the protocol (profile
 * grpc-5.x), against one proxy endpoint. Topics and groups are set up by the harness through the name server
 * ({@code adapters/java_grpc.py}), so this mode runs SDK clients only: producers (normal, FIFO, timed,
 * transactional with a checker that asks the harness), simple consumers and push consumers whose listener asks
 * the harness. Producers are in {@link Grpc5xProducers}, consumers in {@link Grpc5xConsumers}.
 *
 * <p>Time: the client runs on the wall clock. Durations the harness gives (an invisible time) and delivery
 * timestamps reach the server through {@link Clock#wireMs} and {@link Clock#wireTimestamp}; the durations the
 * server hands the client in its settings (a retry policy's backoff, which rmqc serve gives in spec ms) are
 * waited by the client's own timers in wall ms: a FIFO consumer's local retry and a producer's flow-control
 * backoff last 1 / time scale times longer in spec time than the server meant. The harness knows
 * ({@code client_timer_scale} of the target) and scales what it expects of those waits, as for the Node.js
 * client; nacks and dead-letter forwards are server-side and keep spec time.
 */
public final class Grpc5xMode implements Mode {
    static final String PROFILE = "grpc-5.x";
    static final String SDK = "java";
    static final List<String> CAPABILITIES = List.of("send.sync", "send.async", "delay.timer", "consumer.simple5x",
            "consumer.push5x", "consumer.push5x.fifo", "consumer.filter.tag", "transactions", "sdk.java");
    private static final Pattern RESPONSE_CODE = Pattern.compile("response-code=(-?\\d+)");

    static {
        quietLogging();
    }

    final Wire wire;
    final String endpoint;
    private final String version;
    final Map<String, Grpc5xClient> clients = new ConcurrentHashMap<>();
    private final Grpc5xProducers producers;
    private final Grpc5xConsumers consumers;

    public Grpc5xMode(Wire wire, String address, Properties versions) {
        this.wire = wire;
        this.endpoint = address;
        this.version = versions.getProperty("rocketmq.client.java.version", "unknown");
        this.producers = new Grpc5xProducers(this);
        this.consumers = new Grpc5xConsumers(this);
    }

    /**
     * The client logs through its shaded logback (its own {@code logback.xml}) to
     * {@code ${rocketmq.log.root:-~/logs/rocketmq}/rocketmq-client.log}, and to the console only when
     * {@code mq.consoleAppender.enabled} is set: keep the file out of the user's home, in a folder of this
     * process, at WARN unless {@code RMQC_SDK_LOG} asks for more. Set before any client class is loaded.
     */
    private static void quietLogging() {
        if (System.getProperty("rocketmq.log.root") == null) {
            String root = System.getenv("RMQC_SDK_LOG_DIR");
            if (root == null) {
                try {
                    root = Files.createTempDirectory("rmqc-java5-logs").toString();
                    new File(root).deleteOnExit();
                } catch (IOException e) {
                    root = System.getProperty("java.io.tmpdir") + File.separator + "rmqc-java5-logs";
                }
            }
            System.setProperty("rocketmq.log.root", root);
        }
        System.setProperty("rocketmq.log.level", System.getenv().getOrDefault("RMQC_SDK_LOG", "warn"));
        System.setProperty("mq.consoleAppender.enabled", "false");
    }

    @Override public String driverName() { return "rocketmq-client-java"; }
    @Override public String version() { return version; }
    @Override public String profile() { return PROFILE; }
    @Override public List<String> capabilities() { return CAPABILITIES; }

    @Override
    public JsonObject serve(Session session, String cmd, JsonObject m) throws Exception {
        switch (cmd) {
            case "producer": return producers.producer(session, m);
            case "transaction_producer": return producers.transactionProducer(session, m);
            case "send": return producers.send(session, m);
            case "send_in_transaction": return producers.sendInTransaction(session, m);
            case "simple_consumer_5x": return consumers.simpleConsumer(session, m);
            case "receive": return consumers.receive(session, m);
            case "ack": return consumers.ack(session, m);
            case "change_invisible_duration": return consumers.changeInvisibleDuration(session, m);
            case "push_consumer_5x": return consumers.pushConsumer(session, m);
            case "shutdown": {
                client(m);
                shutdown(List.of(str(m, "handle")));
                return new JsonObject();
            }
            case "crash": {
                Grpc5xClient c = client(m);
                clients.remove(str(m, "handle"));
                c.crash();
                return new JsonObject();
            }
            case "settle": { // the harness's wall-clock targets settle by steps; a plain wait here
                long max = m.has("max_ms") ? m.get("max_ms").getAsLong() : 0;
                Thread.sleep(Math.min(wire.clock().wallMs(max), 5000));
                JsonObject r = new JsonObject();
                r.addProperty("now_ms", wire.clock().nowMs());
                return r;
            }
            default:
                throw new NotApplicable("rocketmq-client-java has no " + Wire.gson().toJson(cmd) + " in this driver "
                        + "(topics and groups are set up by the harness through the name server)");
        }
    }

    Grpc5xClient client(JsonObject m) {
        Grpc5xClient c = clients.get(str(m, "handle"));
        if (c == null) {
            throw new NotApplicable("no SDK client has the handle " + Wire.gson().toJson(str(m, "handle")));
        }
        return c;
    }

    void register(String handle, Grpc5xClient c) {
        clients.put(handle, c);
    }

    /**
     * The RocketMQ status code of a client error: a {@code ClientException} made from a server's answer carries
     * it only in its message ({@code [request-id=..., response-code=N] ...}); anything else (the client's own
     * argument checks, a timeout, a refused connection) is -1.
     */
    @Override
    public int errorCode(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String text = t.getMessage();
            if (text != null) {
                Matcher matcher = RESPONSE_CODE.matcher(text);
                if (matcher.find()) {
                    return Integer.parseInt(matcher.group(1));
                }
            }
        }
        return -1;
    }

    static String describe(Throwable e) {
        Throwable t = e;
        while ((t instanceof java.util.concurrent.ExecutionException
                || t instanceof java.util.concurrent.CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        String text = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (t.getCause() != null && t.getCause() != t) {
            text += " (" + t.getCause().getClass().getSimpleName() + ": " + t.getCause().getMessage() + ")";
        }
        return text.length() > 2000 ? text.substring(0, 2000) : text;
    }

    void shutdown(List<String> handles) {
        List<Thread> closing = new ArrayList<>();
        for (String handle : handles) {
            Grpc5xClient c = clients.remove(handle);
            if (c == null) {
                continue;
            }
            Thread t = new Thread(() -> {
                try {
                    c.close();
                } catch (Exception e) {
                    System.err.println("rmqc java driver: shutdown of " + handle + ": " + describe(e));
                }
            }, "rmqc-close-" + handle);
            t.setDaemon(true);
            t.start();
            closing.add(t);
        }
        for (Thread t : closing) {
            try {
                t.join(15000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public void close(Session session) {
        List<String> mine = new ArrayList<>();
        clients.forEach((handle, c) -> {
            if (c.session == session || c.session.name.equals(session.name)) {
                mine.add(handle);
            }
        });
        shutdown(mine);
    }

    @Override
    public void closeAll() {
        shutdown(new ArrayList<>(clients.keySet()));
    }

    // ---- JSON helpers ----

    static String str(JsonObject m, String name) {
        return Wire.str(m, name);
    }

    static JsonObject options(JsonObject m) {
        return Wire.options(m);
    }

    /** {@link Wire#obj}. */
    static JsonObject fields(Object... pairs) {
        return Wire.obj(pairs);
    }

    /** A {@code detail} object: string values only (the event log's detail is a string map). */
    static JsonObject detail(Object... pairs) {
        JsonObject o = new JsonObject();
        for (int i = 0; i < pairs.length; i += 2) {
            if (pairs[i + 1] != null) {
                o.addProperty((String) pairs[i], pairs[i + 1].toString());
            }
        }
        return o;
    }

    static void requireJava(JsonObject options) {
        String sdk = str(options, "sdk");
        if (sdk != null && !sdk.equals(SDK)) {
            throw new NotApplicable("this driver runs the Java 5.x client, not the " + sdk + " one");
        }
    }
}
