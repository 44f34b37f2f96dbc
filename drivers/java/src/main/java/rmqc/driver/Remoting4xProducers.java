package rmqc.driver;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.producer.selector.SelectMessageQueueByHash;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The 4.x Java client's producers: {@code DefaultMQProducer} (sync, async, one-way, ordered by a sharding key
 * through {@code SelectMessageQueueByHash}, batches, delay levels, tags, keys, properties) and
 * {@code TransactionMQProducer} (the local transaction answers what the harness scripted for the send; its
 * checks ask the harness). Events as the reference driver writes them: SEND_INVOKE, then SEND_OK, SEND_FAIL or
 * (one-way) SEND_UNKNOWN; TX_HALF, TX_END, TX_CHECK.
 */
final class Remoting4xProducers {
    private Remoting4xProducers() {
    }

    static final String SDK = "remoting";

    /** A DefaultMQProducer, or a TransactionMQProducer when {@code checks} is true. */
    static final class ProducerClient extends Remoting4xClient {
        final DefaultMQProducer producer;
        private final Map<String, Integer> checks = new ConcurrentHashMap<>();
        private final java.util.Set<String> beaten = ConcurrentHashMap.newKeySet();
        /** Every send of this producer runs on this one thread, as a program's sends from one thread do: the
         * client's queue choice keeps a per-thread index (ThreadLocalIndex, QSEL-01). */
        private final java.util.concurrent.ExecutorService sender = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "rmqc-sender");
            t.setDaemon(true);
            return t;
        });

        ProducerClient(Remoting4xMode mode, Session session, String handle, String group, JsonObject options,
                       boolean transactional) throws MQClientException {
            super(mode, session, handle, group);
            String sdk = str(options, "sdk", "java");
            if (!sdk.equals("java")) {
                throw new NotApplicable("rocketmq-client is the Java 4.x client, not the " + sdk + " one");
            }
            String version = str(options, "version", mode.version());
            if (!version.equals(mode.version())) {
                throw new NotApplicable("rocketmq-client " + mode.version() + " is driven here, not " + version);
            }
            if (transactional) {
                TransactionMQProducer tp = new TransactionMQProducer(group);
                tp.setTransactionListener(new Checker());
                producer = tp;
            } else {
                producer = new DefaultMQProducer(group);
            }
            mode.configure(producer);
            producer.getDefaultMQProducerImpl().registerSendMessageHook(attemptsHook);
            if (options.has("retry_times")) {
                producer.setRetryTimesWhenSendFailed((int) num(options, "retry_times", 2));
            }
            if (options.has("send_latency_fault_enable")) {
                producer.setSendLatencyFaultEnable(flag(options, "send_latency_fault_enable"));
            }
            if (options.has("retry_another_broker_when_not_store_ok")) {
                producer.setRetryAnotherBrokerWhenNotStoreOK(flag(options, "retry_another_broker_when_not_store_ok"));
            }
            producer.start();
            if (transactional && topicsOf(options) != null) {
                for (JsonElement t : topicsOf(options)) {
                    beatAfterRoute(t.getAsString());
                }
            }
        }

        /** Each send attempt as the client made it, by the message's client id: {@code broker:outcome}, the outcome a
         * response code ({@code 0} stored, {@code 10} FLUSH_DISK_TIMEOUT, {@code 11} SLAVE_NOT_AVAILABLE, {@code 12}
         * FLUSH_SLAVE_TIMEOUT, a broker's error code), {@code timeout} or {@code remoting} (no answer, no connection),
         * or {@code sent} (an async or one-way attempt dispatched: its own outcome reaches no hook; an async retry's
         * failures do not either, only the send's last outcome, on the broker that gave it):
         * the attempts {@code DefaultMQProducerImpl.sendKernelImpl} reports to its send hooks before and after each
         * (issue 50: SEND-4X-01..07 judged on a real cluster, where no broker logs them). */
        private final Map<String, List<String>> attempts = new ConcurrentHashMap<>();

        private final org.apache.rocketmq.client.hook.SendMessageHook attemptsHook =
                new org.apache.rocketmq.client.hook.SendMessageHook() {
            @Override public String hookName() {
                return "rmqc-attempts";
            }

            @Override public void sendMessageBefore(org.apache.rocketmq.client.hook.SendMessageContext context) {
            }

            @Override public void sendMessageAfter(org.apache.rocketmq.client.hook.SendMessageContext context) {
                String id = context.getMessage() == null ? null : MessageClientIDSetter.getUniqID(context.getMessage());
                if (id == null) {
                    return;
                }
                // an async send's retry keeps the first attempt's context (MQClientAPIImpl.onExceptionImpl@4.9.8):
                // where it was stored is the result's queue
                SendResult result = context.getSendResult();
                String broker = result != null && result.getMessageQueue() != null
                        ? result.getMessageQueue().getBrokerName()
                        : context.getMq() == null ? "?" : context.getMq().getBrokerName();
                attempts.computeIfAbsent(id, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                        .add(broker + ":" + attemptOutcome(context));
            }
        };

        static String attemptOutcome(org.apache.rocketmq.client.hook.SendMessageContext context) {
            Exception e = context.getException();
            if (e == null) {
                SendResult r = context.getSendResult();
                if (r == null) {
                    return "sent";
                }
                switch (r.getSendStatus()) {
                    case FLUSH_DISK_TIMEOUT: return "10";
                    case SLAVE_NOT_AVAILABLE: return "11";
                    case FLUSH_SLAVE_TIMEOUT: return "12";
                    default: return "0";
                }
            }
            if (e instanceof org.apache.rocketmq.client.exception.MQBrokerException) {
                return Integer.toString(((org.apache.rocketmq.client.exception.MQBrokerException) e).getResponseCode());
            }
            if (e instanceof org.apache.rocketmq.remoting.exception.RemotingTimeoutException
                    || e instanceof org.apache.rocketmq.remoting.exception.RemotingTooMuchRequestException) {
                return "timeout";
            }
            return "remoting";
        }

        /** The attempts the hook saw for {@code id}, as the event's {@code client_attempts}, and forgotten. */
        String attemptsOf(String id) {
            List<String> seen = id == null ? null : attempts.remove(id);
            if (seen == null) {
                return null;
            }
            synchronized (seen) {
                return String.join(",", seen);
            }
        }

        private static JsonArray topicsOf(JsonObject options) {
            return options.has("topics") && options.get("topics").isJsonArray() ? options.getAsJsonArray("topics") : null;
        }

        /**
         * The broker checks a half only with a producer of its group it heard a heart beat from. The client's first
         * heart beat comes 1 wall second after its start (MQClientInstance.startScheduledTask: a fixed delay, then
         * every heartbeatBrokerInterval) and reaches only the brokers whose routes it knows by then: 1 / S spec
         * seconds at time scale S, long past the transaction timeout. So a transaction producer learns its topic's
         * route and sends the heart beat the client would send then, through the client's own calls, once per topic.
         */
        private void beatAfterRoute(String topic) {
            if (!beaten.add(topic)) {
                return;
            }
            org.apache.rocketmq.client.impl.factory.MQClientInstance f = producer.getDefaultMQProducerImpl().getmQClientFactory();
            f.updateTopicRouteInfoFromNameServer(topic);
            f.sendHeartbeatToAllBrokerWithLock();
        }

        @Override
        void shutdown() {
            producer.shutdown();
            sender.shutdownNow();
        }

        private interface Call {
            JsonObject run() throws Exception;
        }

        /** {@code call} on the producer's sending thread; its exception as thrown there. */
        private JsonObject onSender(Call call) throws Exception {
            try {
                return sender.submit(call::run).get();
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exception) {
                    throw (Exception) cause;
                }
                throw e;
            }
        }

        JsonObject send(JsonObject m) throws Exception {
            return onSender(() -> sendNow(m));
        }

        JsonObject sendBatch(JsonObject m) throws Exception {
            return onSender(() -> sendBatchNow(m));
        }

        JsonObject sendInTransaction(JsonObject m) throws Exception {
            return onSender(() -> sendInTransactionNow(m));
        }

        private Message message(String topic, JsonObject m, JsonObject o) {
            Message msg = new Message(topic, body(m));
            if (str(o, "key") != null) {
                msg.setKeys(str(o, "key"));
            }
            if (str(o, "tags") != null) {
                msg.setTags(str(o, "tags"));
            }
            long level = num(o, "delay_level", 0);
            if (level != 0) {
                msg.setDelayTimeLevel((int) level);
            }
            if (o.has("properties") && o.get("properties").isJsonObject()) {
                for (Map.Entry<String, JsonElement> e : o.getAsJsonObject("properties").entrySet()) {
                    msg.putUserProperty(e.getKey(), e.getValue().getAsString());
                }
            }
            if (o.has("immunity_seconds") && !o.get("immunity_seconds").isJsonNull()) {
                // MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS, in the server's seconds
                long seconds = Math.round(o.get("immunity_seconds").getAsDouble() * mode.wire.clock().wireScale);
                msg.putUserProperty(MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS, Long.toString(seconds));
            }
            return msg;
        }

        private static byte[] body(JsonObject m) {
            String b = str(m, "body");
            return b == null ? new byte[0] : Base64.getDecoder().decode(b);
        }

        private JsonObject common(String topic, JsonObject o, String msgId) {
            long level = num(o, "delay_level", 0);
            return obj("topic", topic, "client_id", clientId(), "msg_id", msgId, "key", str(o, "key"),
                    "message_group", str(o, "message_group"), "delay_level", level == 0 ? null : level);
        }

        String clientId() {
            return producer.getDefaultMQProducerImpl().getmQClientFactory() == null ? null
                    : producer.getDefaultMQProducerImpl().getmQClientFactory().getClientId();
        }

        private static JsonObject with(JsonObject base, Object... more) {
            JsonObject out = base.deepCopy();
            JsonObject extra = obj(more);
            for (Map.Entry<String, JsonElement> e : extra.entrySet()) {
                out.add(e.getKey(), e.getValue());
            }
            return out;
        }

        private JsonObject sendNow(JsonObject m) throws Exception {
            String topic = str(m, "topic");
            JsonObject o = options(m);
            String mode = str(o, "mode", "sync");
            String shardingKey = str(o, "message_group");
            Message msg = message(topic, m, o);
            JsonObject common = common(topic, o, null);
            Map<String, String> invokeDetail = new LinkedHashMap<>();
            invokeDetail.put("mode", mode);
            invokeDetail.put("sdk", SDK);
            emit("SEND_INVOKE", with(common, "detail", invokeDetail));
            SendResult result;
            try {
                switch (mode) {
                    case "oneway":
                        if (shardingKey != null) {
                            producer.sendOneway(msg, new SelectMessageQueueByHash(), shardingKey);
                        } else {
                            producer.sendOneway(msg);
                        }
                        String id = MessageClientIDSetter.getUniqID(msg);
                        emit("SEND_UNKNOWN", with(common(topic, o, id), "detail", Map.of("mode", mode, "attempts", "1")));
                        return obj("result", obj("status", "UNKNOWN", "msg_id", id == null ? "" : id, "topic", topic));
                    case "async": {
                        CompletableFuture<SendResult> done = new CompletableFuture<>();
                        SendCallback callback = new SendCallback() {
                            @Override public void onSuccess(SendResult r) {
                                done.complete(r);
                            }

                            @Override public void onException(Throwable e) {
                                done.completeExceptionally(e);
                            }
                        };
                        if (shardingKey != null) {
                            producer.send(msg, new SelectMessageQueueByHash(), shardingKey, callback);
                        } else {
                            producer.send(msg, callback);
                        }
                        try {
                            result = done.get(producer.getSendMsgTimeout() * 4L + 10_000, TimeUnit.MILLISECONDS);
                        } catch (java.util.concurrent.ExecutionException e) {
                            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
                        }
                        break;
                    }
                    case "sync":
                    case "orderly":
                        // a 4.x ordered send: the queue chosen by the sharding key (SelectMessageQueueByHash)
                        result = shardingKey != null || mode.equals("orderly")
                                ? producer.send(msg, new SelectMessageQueueByHash(),
                                        shardingKey != null ? shardingKey : str(o, "key", ""))
                                : producer.send(msg);
                        break;
                    default:
                        throw new NotApplicable("rocketmq-client sends sync, async, oneway and orderly, not " + mode);
                }
            } catch (NotApplicable e) {
                throw e;
            } catch (Exception e) {
                Map<String, String> detail = new LinkedHashMap<>();
                detail.put("mode", mode);
                detail.put("code", Integer.toString(this.mode.errorCode(e)));
                String remark = this.mode.errorMessage(e);
                detail.put("remark", remark == null ? String.valueOf(e.getMessage()) : remark);
                String tried = attemptsOf(MessageClientIDSetter.getUniqID(msg));
                if (tried != null) {
                    detail.put("client_attempts", tried);
                }
                emit("SEND_FAIL", with(common(topic, o, MessageClientIDSetter.getUniqID(msg)), "detail", detail));
                throw e;
            }
            return sent(topic, o, mode, result);
        }

        private JsonObject sent(String topic, JsonObject o, String mode, SendResult result) {
            String status = result.getSendStatus().name();
            Integer queueId = result.getMessageQueue() == null ? null : result.getMessageQueue().getQueueId();
            Map<String, String> detail = new LinkedHashMap<>();
            detail.put("mode", mode);
            detail.put("status", status);
            if (str(o, "tags") != null) {
                detail.put("tags", str(o, "tags"));
            }
            if (result.getOffsetMsgId() != null) {
                detail.put("offset_msg_id", result.getOffsetMsgId());
            }
            String tried = attemptsOf(result.getMsgId());
            if (tried != null) {
                detail.put("client_attempts", tried);
            }
            emit("SEND_OK", with(common(topic, o, result.getMsgId()), "queue_id", queueId,
                    "queue_offset", result.getQueueOffset(), "detail", detail));
            return obj("result", obj("status", status, "msg_id", result.getMsgId(), "topic", topic,
                    "queue_id", queueId, "queue_offset", result.getQueueOffset(),
                    "offset_msg_id", result.getOffsetMsgId()));
        }

        /** {@code DefaultMQProducer.send(Collection)}: one batch; each message's result from the batch's. */
        private JsonObject sendBatchNow(JsonObject m) throws Exception {
            List<Message> batch = new ArrayList<>();
            List<JsonObject> items = new ArrayList<>();
            for (JsonElement e : m.getAsJsonArray("messages")) {
                JsonObject item = e.getAsJsonObject();
                JsonObject o = item.has("options") ? item.getAsJsonObject("options") : item;
                String topic = str(item, "topic");
                Message msg = message(topic, item, o);
                if (!item.has("body")) {
                    msg.setBody("x".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
                batch.add(msg);
                items.add(o);
                emit("SEND_INVOKE", with(common(topic, o, null), "detail", Map.of("mode", "batch", "sdk", SDK)));
            }
            SendResult result;
            try {
                result = producer.send(batch);
            } catch (Exception e) {
                for (int i = 0; i < batch.size(); i++) {
                    String remark = mode.errorMessage(e);
                    emit("SEND_FAIL", with(common(batch.get(i).getTopic(), items.get(i), null), "detail",
                            Map.of("mode", "batch", "code", Integer.toString(mode.errorCode(e)),
                                    "remark", remark == null ? String.valueOf(e.getMessage()) : remark)));
                }
                throw e;
            }
            String[] ids = result.getMsgId() == null ? new String[0] : result.getMsgId().split(",");
            String[] offsetIds = result.getOffsetMsgId() == null ? new String[0] : result.getOffsetMsgId().split(",");
            JsonArray results = new JsonArray();
            for (int i = 0; i < batch.size(); i++) {
                String topic = batch.get(i).getTopic();
                String id = i < ids.length ? ids[i] : "";
                Integer queueId = result.getMessageQueue() == null ? null : result.getMessageQueue().getQueueId();
                long offset = result.getQueueOffset() + i;
                Map<String, String> detail = new LinkedHashMap<>();
                detail.put("mode", "batch");
                detail.put("status", result.getSendStatus().name());
                if (str(items.get(i), "tags") != null) {
                    detail.put("tags", str(items.get(i), "tags"));
                }
                emit("SEND_OK", with(common(topic, items.get(i), id), "queue_id", queueId, "queue_offset", offset,
                        "detail", detail));
                results.add(obj("status", result.getSendStatus().name(), "msg_id", id, "topic", topic,
                        "queue_id", queueId, "queue_offset", offset,
                        "offset_msg_id", i < offsetIds.length ? offsetIds[i] : null));
            }
            return obj("results", results);
        }

        private JsonObject sendInTransactionNow(JsonObject m) throws Exception {
            if (!(producer instanceof TransactionMQProducer)) {
                throw new NotApplicable("handle " + handle + " is not a transaction producer");
            }
            String topic = str(m, "topic");
            JsonObject o = options(m);
            Message msg = message(topic, m, o);
            String local = str(o, "local_state");
            emit("SEND_INVOKE", with(common(topic, o, null), "detail", Map.of("mode", "transaction", "sdk", SDK)));
            LocalTransactionState state = local == null ? LocalTransactionState.UNKNOW : LocalTransactionState.valueOf(local);
            TransactionSendResult result = producer.sendMessageInTransaction(msg, state);
            beatAfterRoute(topic);
            Map<String, String> detail = new LinkedHashMap<>();
            detail.put("local_state", result.getLocalTransactionState() == null ? "UNKNOW"
                    : result.getLocalTransactionState().name());
            detail.put("real_topic", topic);
            if (o.has("immunity_seconds") && !o.get("immunity_seconds").isJsonNull()) {
                detail.put("immunity_seconds", Long.toString(Math.round(o.get("immunity_seconds").getAsDouble())));
            }
            emit("TX_HALF", with(common(topic, o, result.getMsgId()), "detail", detail));
            LocalTransactionState ended = result.getLocalTransactionState();
            if (ended == LocalTransactionState.COMMIT_MESSAGE || ended == LocalTransactionState.ROLLBACK_MESSAGE) {
                emit("TX_END", with(common(topic, o, result.getMsgId()), "detail",
                        Map.of("state", ended.name(), "source", "CLIENT")));
            }
            return obj("result", obj("status", result.getSendStatus().name(), "msg_id", result.getMsgId(),
                    "topic", topic));
        }

        /** executeLocalTransaction answers the state the harness scripted (the send's argument); every check
         * asks the harness, numbering the checks of each key as they come. */
        private final class Checker implements TransactionListener {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return arg instanceof LocalTransactionState ? (LocalTransactionState) arg : LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String key = msg.getKeys();
                int n = checks.merge(key == null ? "" : key, 1, Integer::sum);
                String topic = msg.getProperty(MessageConst.PROPERTY_REAL_TOPIC) != null
                        ? msg.getProperty(MessageConst.PROPERTY_REAL_TOPIC) : msg.getTopic();
                String id = msg.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) != null
                        ? msg.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) : msg.getMsgId();
                emit("TX_CHECK", obj("topic", topic, "key", key, "msg_id", id, "attempt", n, "client_id", clientId()));
                JsonObject answer = mode.wire.ask(session, obj("ask", "check", "producer", handle, "key", key, "n", n));
                String state = str(answer, "state");
                return state == null ? LocalTransactionState.UNKNOW : LocalTransactionState.valueOf(state);
            }
        }
    }
}
