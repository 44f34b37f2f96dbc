package rmqc.driver;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.MessageListener;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.java.hook.CompositedMessageInterceptor;
import org.apache.rocketmq.client.java.hook.MessageHookPoints;
import org.apache.rocketmq.client.java.hook.MessageHookPointsStatus;
import org.apache.rocketmq.client.java.hook.MessageInterceptor;
import org.apache.rocketmq.client.java.hook.MessageInterceptorContext;
import org.apache.rocketmq.client.java.impl.ClientImpl;
import org.apache.rocketmq.client.java.message.GeneralMessage;
import org.apache.rocketmq.client.java.message.MessageViewImpl;
import org.apache.rocketmq.client.java.retry.RetryPolicy;

import static rmqc.driver.Grpc5xMode.detail;
import static rmqc.driver.Grpc5xMode.fields;
import static rmqc.driver.Grpc5xMode.options;
import static rmqc.driver.Grpc5xMode.str;
import static rmqc.driver.Grpc5xProducers.firstKey;

/**
 * The Java 5.x client's consumers: the simple consumer (receive, ack, change of invisible duration, driven by
 * the harness) and the push consumer, whose {@code MessageListener} asks the harness. What a push consumer
 * does on its own (its acks, its nacks by a change of invisible duration, its dead-letter forwards) is
 * recorded through the client's own {@code MessageInterceptor} hook points.
 */
final class Grpc5xConsumers {
    private static final Duration AWAIT_DURATION = Duration.ofMillis(1000);
    private static final long READY_TIMEOUT_MS = 15000;

    private final Grpc5xMode mode;
    private final Wire wire;
    private final Grpc5xProducers producers;

    Grpc5xConsumers(Grpc5xMode mode) {
        this.mode = mode;
        this.wire = mode.wire;
        this.producers = new Grpc5xProducers(mode);
    }

    private ClientServiceProvider provider() {
        return producers.provider();
    }

    private static Map<String, FilterExpression> subscriptions(JsonObject m) {
        String expression = str(options(m), "expression");
        return Map.of(str(m, "topic"), new FilterExpression(expression == null ? "*" : expression,
                FilterExpressionType.TAG));
    }

    private static String started(String kind, JsonObject m, Exception e) {
        return kind + " " + str(m, "handle") + " failed to start: " + Grpc5xMode.describe(e);
    }

    // ---- the simple consumer ----

    JsonObject simpleConsumer(Session session, JsonObject m) throws Exception {
        Grpc5xMode.requireJava(options(m));
        SimpleConsumer consumer;
        try {
            consumer = provider().newSimpleConsumerBuilder().setClientConfiguration(producers.configuration())
                    .setConsumerGroup(str(m, "group")).setSubscriptionExpressions(subscriptions(m))
                    .setAwaitDuration(AWAIT_DURATION).build();
        } catch (Exception e) {
            throw new IllegalStateException(started("simple consumer", m, e), e);
        }
        mode.register(str(m, "handle"), new Grpc5xClient(session, "simple consumer", consumer, str(m, "group")));
        return new JsonObject();
    }

    JsonObject receive(Session session, JsonObject m) throws Exception {
        Grpc5xClient entry = mode.client(m);
        int max = m.has("max_messages") && !m.get("max_messages").isJsonNull() ? m.get("max_messages").getAsInt() : 16;
        long invisible = m.has("invisible_ms") && !m.get("invisible_ms").isJsonNull()
                ? m.get("invisible_ms").getAsLong() : 30000;
        List<MessageView> messages = ((SimpleConsumer) entry.client).receive(max,
                Duration.ofMillis(Math.max(0, wire.clock().wireMs(invisible))));
        JsonArray views = new JsonArray();
        for (MessageView mv : messages) {
            JsonObject view = viewJson(mv);
            if (mv instanceof MessageViewImpl) {
                entry.views.put(((MessageViewImpl) mv).getReceiptHandle(), (MessageViewImpl) mv);
            }
            wire.emit(session, "DELIVER", fields("topic", mv.getTopic(), "group", entry.group,
                    "msg_id", mv.getMessageId().toString(), "key", firstKey(mv),
                    "message_group", mv.getMessageGroup().orElse(null), "attempt", mv.getDeliveryAttempt()));
            views.add(view);
        }
        return fields("views", views);
    }

    /**
     * The message view received with the view's own receipt handle: the client moves a view on to the handle a
     * change of invisible time returned, while a caller may hold on to the old one (RETRY-5X-09).
     */
    private static MessageViewImpl held(Grpc5xClient entry, JsonObject view) {
        String handle = str(view, "receipt_handle");
        MessageViewImpl mv = handle == null ? null : entry.views.get(handle);
        if (mv == null) {
            throw new NotApplicable("no message was received with the receipt handle " + handle);
        }
        mv.setReceiptHandle(handle);
        return mv;
    }

    JsonObject ack(Session session, JsonObject m) throws Exception {
        Grpc5xClient entry = mode.client(m);
        MessageViewImpl mv;
        synchronized (entry) {
            mv = held(entry, m.getAsJsonObject("view"));
            try {
                ((SimpleConsumer) entry.client).ack(mv);
            } catch (Exception e) {
                return fields("code", mode.errorCode(e));
            }
        }
        wire.emit(session, "ACK", fields("topic", mv.getTopic(), "group", entry.group,
                "msg_id", mv.getMessageId().toString(), "key", firstKey(mv), "attempt", mv.getDeliveryAttempt()));
        return fields("code", 20000);
    }

    JsonObject changeInvisibleDuration(Session session, JsonObject m) throws Exception {
        Grpc5xClient entry = mode.client(m);
        long invisible = m.get("invisible_ms").getAsLong();
        synchronized (entry) {
            MessageViewImpl mv = held(entry, m.getAsJsonObject("view"));
            try {
                ((SimpleConsumer) entry.client).changeInvisibleDuration(mv,
                        Duration.ofMillis(wire.clock().wireMs(invisible)));
            } catch (Exception e) {
                JsonObject r = fields("code", mode.errorCode(e));
                r.add("receipt_handle", com.google.gson.JsonNull.INSTANCE);
                return r;
            }
            entry.views.put(mv.getReceiptHandle(), mv); // the client put the new handle on the same view
            return fields("code", 20000, "receipt_handle", mv.getReceiptHandle());
        }
    }

    // ---- the push consumer ----

    JsonObject pushConsumer(Session session, JsonObject m) throws Exception {
        Grpc5xMode.requireJava(options(m));
        String handle = str(m, "handle");
        String group = str(m, "group");
        Map<String, Integer> attempts = new ConcurrentHashMap<>(); // message id -> the attempt last delivered
        Map<String, String> keys = new ConcurrentHashMap<>();
        CountDownLatch receiving = new CountDownLatch(1);
        MessageListener listener = mv -> {
            try {
                return consumed(session, handle, group, mv, attempts, keys);
            } catch (RuntimeException e) {
                System.err.println("rmqc java driver: listener of " + handle + " failed: " + Grpc5xMode.describe(e));
                throw e;
            }
        };
        PushConsumer consumer;
        try {
            consumer = provider().newPushConsumerBuilder().setClientConfiguration(producers.configuration())
                    .setConsumerGroup(group).setSubscriptionExpressions(subscriptions(m))
                    .setMessageListener(listener).build();
        } catch (Exception e) {
            throw new IllegalStateException(started("push consumer", m, e), e);
        }
        // build() has started it; its first assignment scan comes a second later, its first receive after that
        Recorder recorder = new Recorder(session, group, consumer, attempts, keys, receiving);
        addInterceptor(consumer, recorder);
        mode.register(handle, new Grpc5xClient(session, "push consumer", consumer, group));
        // ready once its assignment arrived and its first receive is out: before that no delivery time means anything
        if (!receiving.await(READY_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("push consumer " + handle + " got no queue assignment within "
                    + READY_TIMEOUT_MS + " ms");
        }
        return new JsonObject();
    }

    private ConsumeResult consumed(Session session, String handle, String group, MessageView mv,
                                   Map<String, Integer> attempts, Map<String, String> keys) {
        JsonObject view = viewJson(mv);
        String msgId = mv.getMessageId().toString();
        int attempt = mv.getDeliveryAttempt();
        attempts.put(msgId, attempt);
        String key = firstKey(mv);
        if (key != null) {
            keys.put(msgId, key);
        }
        wire.emit(session, "DELIVER", fields("topic", mv.getTopic(), "group", group, "msg_id", msgId, "key", key,
                "message_group", mv.getMessageGroup().orElse(null), "attempt", attempt,
                "detail", detail("reconsume_times", Math.max(0, attempt - 1))));
        JsonObject answer = wire.ask(session, fields("ask", "consume", "consumer", handle, "view", view));
        String outcome = str(answer, "outcome");
        boolean ok = "SUCCESS".equals(outcome);
        wire.emit(session, ok ? "CONSUME_OK" : "CONSUME_FAIL", fields("topic", mv.getTopic(), "group", group,
                "msg_id", msgId, "key", key, "attempt", attempt, "detail", detail("outcome", String.valueOf(outcome))));
        return ok ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
    }

    /**
     * The client's own hook (its metrics use it): {@code ClientImpl.addMessageInterceptor} takes one only before
     * start, and {@code build()} starts the consumer; so the interceptor joins the client's composite directly,
     * before the first assignment scan (a second after start) can lead to a receive.
     */
    private static void addInterceptor(PushConsumer consumer, MessageInterceptor interceptor) throws Exception {
        Field composite = ClientImpl.class.getDeclaredField("compositedMessageInterceptor");
        composite.setAccessible(true);
        ((CompositedMessageInterceptor) composite.get(consumer)).addInterceptor(interceptor);
    }

    /** The push consumer's retry policy, as its process queues read it ({@code PushConsumerImpl.getRetryPolicy}). */
    private static RetryPolicy retryPolicy(PushConsumer consumer) {
        try {
            Method get = consumer.getClass().getMethod("getRetryPolicy");
            get.setAccessible(true);
            return (RetryPolicy) get.invoke(consumer);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** The push consumer's first receive, and its acks, nacks and dead-letter forwards that the server took. */
    private final class Recorder implements MessageInterceptor {
        private final Session session;
        private final String group;
        private final PushConsumer consumer;
        private final Map<String, Integer> attempts;
        private final Map<String, String> keys;
        private final CountDownLatch receiving;

        Recorder(Session session, String group, PushConsumer consumer, Map<String, Integer> attempts,
                 Map<String, String> keys, CountDownLatch receiving) {
            this.session = session;
            this.group = group;
            this.consumer = consumer;
            this.attempts = attempts;
            this.keys = keys;
            this.receiving = receiving;
        }

        @Override
        public void doBefore(MessageInterceptorContext context, List<GeneralMessage> messages) {
            if (context.getMessageHookPoints() == MessageHookPoints.RECEIVE) {
                receiving.countDown();
            }
        }

        @Override
        public void doAfter(MessageInterceptorContext context, List<GeneralMessage> messages) {
            if (context.getStatus() != MessageHookPointsStatus.OK) {
                return;
            }
            try {
                for (GeneralMessage g : messages) {
                    record(context.getMessageHookPoints(), g);
                }
            } catch (RuntimeException e) {
                System.err.println("rmqc java driver: recording " + context.getMessageHookPoints() + " failed: "
                        + Grpc5xMode.describe(e));
            }
        }

        private void record(MessageHookPoints point, GeneralMessage g) {
            String msgId = g.getMessageId().map(Object::toString).orElse(null);
            String key = g.getKeys() == null || g.getKeys().isEmpty() ? keys.get(msgId) : g.getKeys().iterator().next();
            int attempt = g.getDeliveryAttempt().orElse(attempts.getOrDefault(msgId, 1));
            switch (point) {
                case ACK:
                    wire.emit(session, "ACK", fields("topic", g.getTopic(), "group", group, "msg_id", msgId,
                            "key", key, "attempt", attempt));
                    break;
                case CHANGE_INVISIBLE_DURATION: { // ProcessQueueImpl.nackMessage: the policy's delay for the attempt
                    RetryPolicy policy = retryPolicy(consumer);
                    Long delay = policy == null ? null
                            : Math.round(policy.getNextAttemptDelay(attempt).toMillis() / wire.clock().wireScale);
                    wire.emit(session, "RETRY_SCHEDULED", fields("topic", g.getTopic(), "group", group,
                            "msg_id", msgId, "key", key, "attempt", attempt + 1, "expected_delay_ms", delay,
                            "detail", detail("via", "change_invisible_duration")));
                    break;
                }
                case FORWARD_TO_DLQ: {
                    RetryPolicy policy = retryPolicy(consumer);
                    wire.emit(session, "RETRY_SCHEDULED", fields("topic", g.getTopic(), "group", group,
                            "msg_id", msgId, "key", key, "attempt", attempt, "detail", detail("via", "forward_to_dlq",
                                    "max_delivery_attempts", policy == null ? null : policy.getMaxAttempts())));
                    break;
                }
                default:
                    break;
            }
        }
    }

    // ---- message views ----

    static JsonObject viewJson(MessageView mv) {
        int attempt = Math.max(1, mv.getDeliveryAttempt());
        ByteBuffer body = mv.getBody().duplicate();
        byte[] bytes = new byte[body.remaining()];
        body.get(bytes);
        JsonObject properties = new JsonObject();
        mv.getProperties().forEach(properties::addProperty);
        JsonObject view = fields("msg_id", mv.getMessageId().toString(), "topic", mv.getTopic(),
                "key", firstKey(mv), "tags", mv.getTag().orElse(null),
                "body", Base64.getEncoder().encodeToString(bytes), "reconsume_times", attempt - 1,
                "delivery_attempt", attempt, "queue_id", -1,
                "queue_offset", mv instanceof MessageViewImpl ? ((MessageViewImpl) mv).getOffset() : -1,
                "stored_topic", mv.getTopic(), "message_group", mv.getMessageGroup().orElse(null),
                "properties", properties,
                "receipt_handle", mv instanceof MessageViewImpl ? ((MessageViewImpl) mv).getReceiptHandle() : null);
        for (String nullable : new String[] {"key", "tags", "message_group"}) {
            if (!view.has(nullable)) {
                view.add(nullable, com.google.gson.JsonNull.INSTANCE);
            }
        }
        return view;
    }
}
