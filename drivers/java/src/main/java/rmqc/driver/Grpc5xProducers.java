package rmqc.driver;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.ProducerBuilder;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;
import org.apache.rocketmq.client.java.impl.producer.SendReceiptImpl;

import static rmqc.driver.Grpc5xMode.detail;
import static rmqc.driver.Grpc5xMode.fields;
import static rmqc.driver.Grpc5xMode.options;
import static rmqc.driver.Grpc5xMode.str;

/** The Java 5.x client's producers: normal, FIFO (by message group), timed (a delivery timestamp), transactional. */
final class Grpc5xProducers {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);

    private final Grpc5xMode mode;
    private final Wire wire;
    private final ClientServiceProvider provider = ClientServiceProvider.loadService();

    Grpc5xProducers(Grpc5xMode mode) {
        this.mode = mode;
        this.wire = mode.wire;
    }

    ClientConfiguration configuration() {
        return ClientConfiguration.newBuilder().setEndpoints(mode.endpoint).enableSsl(false)
                .setRequestTimeout(REQUEST_TIMEOUT).build();
    }

    ClientServiceProvider provider() {
        return provider;
    }

    JsonObject producer(Session session, JsonObject m) throws Exception {
        Grpc5xMode.requireJava(options(m));
        Producer producer = started("producer", m, provider.newProducerBuilder().setClientConfiguration(configuration()));
        mode.register(str(m, "handle"), new Grpc5xClient(session, "producer", producer, str(m, "group")));
        return new JsonObject();
    }

    JsonObject transactionProducer(Session session, JsonObject m) throws Exception {
        String handle = str(m, "handle");
        Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        TransactionChecker checker = view -> check(session, handle, checks, view);
        List<String> topics = new ArrayList<>();
        if (m.has("topics") && m.get("topics").isJsonArray()) {
            for (JsonElement t : m.getAsJsonArray("topics")) {
                topics.add(t.getAsString());
            }
        }
        ProducerBuilder builder = provider.newProducerBuilder().setClientConfiguration(configuration())
                .setTransactionChecker(checker);
        if (!topics.isEmpty()) {
            builder.setTopics(topics.toArray(new String[0]));
        }
        Producer producer = started("transaction producer", m, builder);
        mode.register(handle, new Grpc5xClient(session, "transaction producer", producer, str(m, "group")));
        return new JsonObject();
    }

    /** The client's {@code TransactionChecker}: the harness decides, as a user's checker would. */
    private TransactionResolution check(Session session, String handle, Map<String, AtomicInteger> checks,
                                        MessageView view) {
        String key = firstKey(view);
        String msgId = view.getMessageId().toString();
        int n = checks.computeIfAbsent(msgId, id -> new AtomicInteger()).incrementAndGet();
        wire.emit(session, "TX_CHECK", fields("topic", view.getTopic(), "msg_id", msgId, "key", key,
                "detail", detail("check_times", n)));
        JsonObject question = fields("ask", "check", "producer", handle, "key", key, "n", n);
        if (key == null) {
            question.add("key", com.google.gson.JsonNull.INSTANCE);
        }
        JsonObject answer = wire.ask(session, question);
        String state = str(answer, "state");
        if ("COMMIT_MESSAGE".equals(state) || "ROLLBACK_MESSAGE".equals(state)) {
            wire.emit(session, "TX_END", fields("topic", view.getTopic(), "msg_id", msgId, "key", key,
                    "detail", detail("state", state, "source", "SERVER_CHECK")));
            return "COMMIT_MESSAGE".equals(state) ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
        }
        return TransactionResolution.UNKNOWN;
    }

    private Producer started(String kind, JsonObject m, ProducerBuilder builder) throws Exception {
        try {
            return builder.build(); // build() starts the client: routes of its topics, then its settings
        } catch (Exception e) {
            throw new IllegalStateException(kind + " " + str(m, "handle") + " failed to start: "
                    + Grpc5xMode.describe(e), e);
        }
    }

    static String firstKey(MessageView view) {
        return view.getKeys() == null || view.getKeys().isEmpty() ? null : view.getKeys().iterator().next();
    }

    /** The client's {@code Message}; its builder makes the client's own argument checks. */
    private Message message(JsonObject m, JsonObject o) {
        if (o.has("delay_level") && !o.get("delay_level").isJsonNull() && o.get("delay_level").getAsInt() != 0) {
            throw new NotApplicable("the Java 5.x client has no delay levels (it sends delivery timestamps)");
        }
        String sendMode = str(o, "mode");
        if (sendMode != null && !sendMode.equals("sync") && !sendMode.equals("async")) {
            throw new NotApplicable("the Java 5.x client sends synchronously or asynchronously, not " + sendMode);
        }
        Grpc5xMode.requireJava(o);
        if (o.has("immunity_seconds") && !o.get("immunity_seconds").isJsonNull()) {
            throw new NotApplicable("the Java 5.x client sets no check immunity time");
        }
        MessageBuilder b = provider.newMessageBuilder().setTopic(str(m, "topic"));
        String body = str(m, "body");
        try {
            b.setBody(Base64.getDecoder().decode(body == null ? "" : body));
        } catch (IllegalArgumentException e) {
            throw new ClientCheck(e);
        }
        try {
            if (str(o, "key") != null) {
                b.setKeys(str(o, "key"));
            }
            if (str(o, "tags") != null) {
                b.setTag(str(o, "tags"));
            }
            if (str(o, "message_group") != null) {
                b.setMessageGroup(str(o, "message_group"));
            }
            if (o.has("properties") && o.get("properties").isJsonObject()) {
                for (Map.Entry<String, JsonElement> p : o.getAsJsonObject("properties").entrySet()) {
                    b.addProperty(p.getKey(), p.getValue().getAsString());
                }
            }
            if (o.has("delivery_timestamp_ms") && !o.get("delivery_timestamp_ms").isJsonNull()) {
                b.setDeliveryTimestamp(wire.clock().wireTimestamp(o.get("delivery_timestamp_ms").getAsLong()));
            }
            return b.build();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new ClientCheck(e);
        }
    }

    /** The client's own check of an argument (Guava's Preconditions): a RocketMQError with code -1. */
    static final class ClientCheck extends RuntimeException {
        ClientCheck(Throwable cause) {
            super(cause.getClass().getSimpleName() + ": " + cause.getMessage(), cause);
        }
    }

    JsonObject send(Session session, JsonObject m) throws Exception {
        Grpc5xClient entry = mode.client(m);
        JsonObject o = options(m);
        String topic = str(m, "topic");
        String key = str(o, "key");
        String group = str(o, "message_group");
        String sendMode = str(o, "mode") == null ? "sync" : str(o, "mode");
        int seq = entry.nextSeq(group);
        JsonObject common = fields("topic", topic, "key", key, "message_group", group, "producer_seq", seq);
        Message message;
        wire.emit(session, "SEND_INVOKE", with(common, "detail", detail("mode", sendMode, "sdk", Grpc5xMode.SDK)));
        SendReceipt receipt;
        try {
            message = message(m, o);
            Producer producer = (Producer) entry.client;
            receipt = sendMode.equals("async") ? unwrap(() -> producer.sendAsync(message).get()) : producer.send(message);
        } catch (NotApplicable e) {
            throw e;
        } catch (Exception e) {
            sendFailed(session, common, e);
            throw e;
        }
        Long offset = receipt instanceof SendReceiptImpl ? ((SendReceiptImpl) receipt).getOffset() : null;
        JsonObject d = detail("mode", sendMode, "status", "SEND_OK", "tags", str(o, "tags"));
        wire.emit(session, "SEND_OK", with(with(with(common, "msg_id", receipt.getMessageId().toString()),
                "queue_offset", offset), "detail", d));
        JsonObject result = fields("status", "SEND_OK", "msg_id", receipt.getMessageId().toString(), "topic", topic,
                "queue_offset", offset);
        return fields("result", result);
    }

    JsonObject sendInTransaction(Session session, JsonObject m) throws Exception {
        Grpc5xClient entry = mode.client(m);
        JsonObject o = options(m);
        String topic = str(m, "topic");
        String key = str(o, "key");
        Producer producer = (Producer) entry.client;
        JsonObject common = fields("topic", topic, "key", key);
        wire.emit(session, "SEND_INVOKE", with(common, "detail", detail("mode", "transaction", "sdk", Grpc5xMode.SDK)));
        SendReceipt receipt;
        Transaction transaction;
        try {
            Message message = message(m, o);
            transaction = producer.beginTransaction();
            receipt = producer.send(message, transaction);
        } catch (NotApplicable e) {
            throw e;
        } catch (Exception e) {
            sendFailed(session, common, e);
            throw e;
        }
        String msgId = receipt.getMessageId().toString();
        String state = str(o, "local_state") == null ? "UNKNOW" : str(o, "local_state");
        String transactionId = receipt instanceof SendReceiptImpl ? ((SendReceiptImpl) receipt).getTransactionId() : null;
        JsonObject ended = fields("topic", topic, "msg_id", msgId, "key", key);
        wire.emit(session, "TX_HALF", with(ended, "detail", detail("real_topic", topic, "transaction_id", transactionId,
                "local_state", state)));
        if (state.equals("COMMIT_MESSAGE")) {
            transaction.commit();
        } else if (state.equals("ROLLBACK_MESSAGE")) {
            transaction.rollback();
        }
        if (state.equals("COMMIT_MESSAGE") || state.equals("ROLLBACK_MESSAGE")) {
            wire.emit(session, "TX_END", with(ended, "detail", detail("state", state, "source", "CLIENT")));
        }
        return fields("result", fields("status", "SEND_OK", "msg_id", msgId, "topic", topic));
    }

    /** A failed send is logged as SEND_FAIL with its code and remark, then thrown on to the reply. */
    private void sendFailed(Session session, JsonObject common, Throwable e) {
        int code = mode.errorCode(e);
        String remark = Grpc5xMode.describe(e);
        wire.emit(session, "SEND_FAIL", with(common, "detail", detail("code", code,
                "remark", remark.length() > 300 ? remark.substring(0, 300) : remark)));
    }

    interface Call<T> {
        T call() throws Exception;
    }

    /** A future's outcome with the client's own exception, not the future's wrapper. */
    static <T> T unwrap(Call<T> call) throws Exception {
        try {
            return call.call();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
    }

    static JsonObject with(JsonObject base, String name, Object value) {
        JsonObject copy = base.deepCopy();
        if (value instanceof JsonElement) {
            copy.add(name, (JsonElement) value);
        } else if (value instanceof Number) {
            copy.addProperty(name, (Number) value);
        } else if (value != null) {
            copy.addProperty(name, value.toString());
        }
        return copy;
    }

    static JsonArray array(List<String> values) {
        JsonArray a = new JsonArray();
        values.forEach(a::add);
        return a;
    }
}
