package rmqc.driver;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.consumer.store.LocalFileOffsetStore;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A {@code DefaultMQPushConsumer} of the 4.x Java client: concurrent or orderly, clustering or broadcasting, tag
 * or SQL92 subscription, an allocation strategy by name, consumeFromWhere, maxReconsumeTimes and
 * suspendCurrentQueueTimeMillis from the options. Its listener asks the harness for each message. Events as the
 * reference writes them: CONSUMER_START, DELIVER, CONSUME_OK / CONSUME_FAIL, OFFSET_COMMIT (the client's own
 * offset store growing), REBALANCE (the client's allocation changing), CONSUMER_STOP.
 */
final class Remoting4xPushConsumer extends Remoting4xClient {
    final DefaultMQPushConsumer consumer;
    final boolean orderly;
    final boolean broadcasting;
    final String topic;
    private final String expression;
    private final int delayLevelWhenNextConsume;
    private final WatchedOffsetStore offsets = new WatchedOffsetStore();
    /** topic -> (the client ids, the queues) of this client's last allocation (clustering). */
    private final Map<String, List<String>> lastCids = new ConcurrentHashMap<>();
    private final Map<String, Set<MessageQueue>> lastAllocation = new ConcurrentHashMap<>();
    /** The process queues whose first PULL_MESSAGE the client has sent (by identity: a queue taken again gets a new
     * one). The offset a queue starts from is computed just before it ({@link FirstPulls}). */
    private final Set<ProcessQueue> pulled = Collections.newSetFromMap(Collections.synchronizedMap(new WeakHashMap<>()));
    volatile boolean stopped;
    /** Marks the room in a client id (the instance name's end) for the MACHINE_ROOM_NEARBY resolver. */
    static final char ROOM_MARK = '~';

    Remoting4xPushConsumer(Remoting4xMode mode, Session session, String handle, String group, String topic,
                           JsonObject o) throws MQClientException {
        super(mode, session, handle, group);
        this.topic = topic;
        this.orderly = flag(o, "orderly");
        this.broadcasting = flag(o, "broadcasting");
        this.expression = str(o, "expression", "*");
        this.delayLevelWhenNextConsume = (int) num(o, "delay_level_when_next_consume", 0);
        String sdk = str(o, "sdk", "java");
        if (!sdk.equals("java")) {
            throw new NotApplicable("rocketmq-client is the Java 4.x client, not the " + sdk + " one");
        }
        // the hook is the client's from its start: its first pulls come during consumer.start()
        consumer = new DefaultMQPushConsumer(group, new FirstPulls(), new AllocateMessageQueueAveragely());
        mode.configure(consumer);
        if (str(o, "consumer_room") != null) {
            consumer.setInstanceName(consumer.getInstanceName() + ROOM_MARK + str(o, "consumer_room"));
        }
        consumer.setMessageModel(broadcasting ? MessageModel.BROADCASTING : MessageModel.CLUSTERING);
        consumer.setMaxReconsumeTimes((int) num(o, "max_reconsume_times", -1));
        if (o.has("suspend_ms")) {
            consumer.setSuspendCurrentQueueTimeMillis(num(o, "suspend_ms", 1000));
        }
        consumer.setConsumeFromWhere(ConsumeFromWhere.valueOf(str(o, "consume_from_where", "CONSUME_FROM_LAST_OFFSET")));
        if (o.has("consume_timestamp_ms") && !o.get("consume_timestamp_ms").isJsonNull()) {
            long wall = mode.wire.clock().wireTimestamp(num(o, "consume_timestamp_ms", 0));
            consumer.setConsumeTimestamp(UtilAll.timeMillisToHumanString3(wall));
        }
        consumer.setAllocateMessageQueueStrategy(new Watched(strategy(o)));
        consumer.setOffsetStore(offsets);
        if ("SQL92".equals(str(o, "expression_type", "TAG"))) {
            consumer.subscribe(topic, MessageSelector.bySql(expression));
        } else {
            consumer.subscribe(topic, expression);
        }
        if (orderly) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                ConsumeOrderlyStatus status = ConsumeOrderlyStatus.SUCCESS;
                for (MessageExt msg : msgs) {
                    String outcome = consume(msg, context.getMessageQueue());
                    status = orderlyStatus(outcome);
                    if (status != ConsumeOrderlyStatus.SUCCESS) {
                        return status;
                    }
                }
                return status;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                if (delayLevelWhenNextConsume != 0) {
                    context.setDelayLevelWhenNextConsume(delayLevelWhenNextConsume);
                }
                ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                for (MessageExt msg : msgs) {
                    status = concurrentStatus(consume(msg, context.getMessageQueue()));
                    if (status != ConsumeConcurrentlyStatus.CONSUME_SUCCESS) {
                        return status;
                    }
                }
                return status;
            });
        }
        try {
            consumer.start();
        } catch (MQClientException | RuntimeException e) {
            // a start refused after the client came up (checkClientInBroker: a filter the broker refuses) leaves it
            // running: it goes, as a user's would when start throws
            consumer.shutdown();
            throw e;
        }
        // the client's pause after a pull that failed, on the server's clock
        consumer.getDefaultMQPushConsumerImpl().setPullTimeDelayMillsWhenException(mode.timers.pullDelayOnExceptionMs);
        Map<String, String> detail = new LinkedHashMap<>();
        detail.put("consumer", "push");
        detail.put("mode", broadcasting ? "broadcasting" : "clustering");
        detail.put("orderly", Boolean.toString(orderly));
        detail.put("expression", expression);
        emit("CONSUMER_START", obj("topic", topic, "group", group, "client_id", clientId(),
                "attempt", maxDeliveries(), "detail", detail));
    }

    /** The most deliveries of one message before its dead letter, where there is such an end: the effective
     * maxReconsumeTimes + 1 (concurrent: -1 is 16, DefaultMQPushConsumerImpl.getMaxReconsumeTimes; orderly: -1 is
     * Integer.MAX_VALUE, ConsumeMessageOrderlyService.getMaxReconsumeTimes); none when broadcasting. */
    private Integer maxDeliveries() {
        int configured = consumer.getMaxReconsumeTimes();
        if (broadcasting || (orderly && configured == -1)) {
            return null;
        }
        return (configured == -1 ? 16 : configured) + 1;
    }

    String clientId() {
        MQClientInstance f = consumer.getDefaultMQPushConsumerImpl().getmQClientFactory();
        return f == null ? null : f.getClientId();
    }

    private AllocateMessageQueueStrategy strategy(JsonObject o) {
        String name = str(o, "allocation", "AVG");
        switch (name) {
            case "AVG":
                return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE":
                return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH":
                return o.has("virtual_nodes") ? new AllocateMessageQueueConsistentHash((int) num(o, "virtual_nodes", 10))
                        : new AllocateMessageQueueConsistentHash();
            case "CONFIG": {
                // the configured list: the subscribed topic's queues of the given ids, on every broker it has
                Set<Integer> ids = new HashSet<>();
                for (JsonElement e : o.getAsJsonArray("allocation_queue_ids")) {
                    ids.add(e.getAsInt());
                }
                return new Configured(ids);
            }
            case "MACHINE_ROOM": {
                AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
                Set<String> rooms = new HashSet<>();
                for (JsonElement e : o.getAsJsonArray("consumer_rooms")) {
                    rooms.add(e.getAsString());
                }
                s.setConsumeridcs(rooms);
                return s;
            }
            case "MACHINE_ROOM_NEARBY":
                // the user's resolver: a broker's room is its name up to the first '-'; a consumer's, what its client
                // id says after ROOM_MARK (its instance name carries the room the options gave it)
                return new AllocateMachineRoomNearby(new AllocateMessageQueueAveragely(),
                        new AllocateMachineRoomNearby.MachineRoomResolver() {
                            @Override public String brokerDeployIn(MessageQueue mq) {
                                return mq.getBrokerName().split("-")[0];
                            }

                            @Override public String consumerDeployIn(String clientID) {
                                int at = clientID.lastIndexOf(ROOM_MARK);
                                return at < 0 ? "" : clientID.substring(at + 1);
                            }
                        });
            default:
                throw new NotApplicable("rocketmq-client has no allocation strategy named " + name);
        }
    }

    // ---- consumption ----

    private String consume(MessageExt msg, MessageQueue from) {
        String key = msg.getKeys();
        String msgId = msg.getMsgId();
        int rt = msg.getReconsumeTimes();
        String storedTopic = from != null ? from.getTopic() : msg.getTopic();
        Map<String, String> detail = new LinkedHashMap<>();
        detail.put("stored_topic", storedTopic);
        detail.put("reconsume_times", Integer.toString(rt));
        emit("DELIVER", obj("topic", msg.getTopic(), "group", group, "client_id", clientId(), "msg_id", msgId,
                "key", key, "queue_id", msg.getQueueId(), "queue_offset", msg.getQueueOffset(), "attempt", rt + 1,
                "detail", detail));
        JsonObject properties = new JsonObject();
        if (msg.getProperties() != null) {
            for (Map.Entry<String, String> e : msg.getProperties().entrySet()) {
                properties.addProperty(e.getKey(), e.getValue());
            }
        }
        byte[] body = msg.getBody() == null ? new byte[0] : msg.getBody();
        JsonObject view = obj("msg_id", msgId, "topic", msg.getTopic(), "key", key, "tags", msg.getTags(),
                "body", Base64.getEncoder().encodeToString(body), "reconsume_times", rt, "delivery_attempt", rt + 1,
                "queue_id", msg.getQueueId(), "queue_offset", msg.getQueueOffset(), "stored_topic", storedTopic,
                "properties", properties);
        JsonObject answer = mode.wire.ask(session, obj("ask", "consume", "consumer", handle, "view", view));
        String outcome = str(answer, "outcome", "EXCEPTION");
        emit(outcome.equals("SUCCESS") ? "CONSUME_OK" : "CONSUME_FAIL", obj("topic", msg.getTopic(), "group", group,
                "client_id", clientId(), "msg_id", msgId, "key", key, "attempt", rt + 1, "queue_id", msg.getQueueId(),
                "queue_offset", msg.getQueueOffset(), "detail", Map.of("outcome", outcome)));
        return outcome;
    }

    /** The harness's outcome as the listener's return: EXCEPTION throws, NULL returns null (the client takes
     * both as RECONSUME_LATER, ConsumeMessageConcurrentlyService.ConsumeRequest.run). */
    private static ConsumeConcurrentlyStatus concurrentStatus(String outcome) {
        switch (outcome) {
            case "SUCCESS":
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            case "EXCEPTION":
                throw new IllegalStateException("the harness's listener threw");
            case "NULL":
                return null;
            default:
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        }
    }

    /** EXCEPTION throws, NULL returns null (both SUSPEND_CURRENT_QUEUE_A_MOMENT in
     * ConsumeMessageOrderlyService.ConsumeRequest.run); any other failure suspends the queue. */
    private static ConsumeOrderlyStatus orderlyStatus(String outcome) {
        switch (outcome) {
            case "SUCCESS":
                return ConsumeOrderlyStatus.SUCCESS;
            case "EXCEPTION":
                throw new IllegalStateException("the harness's listener threw");
            case "NULL":
                return null;
            default:
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
        }
    }

    // ---- state ----

    /** The queues this client holds (its RebalanceImpl's process queues not dropped). */
    Set<MessageQueue> assigned() {
        Set<MessageQueue> out = new HashSet<>();
        for (Map.Entry<MessageQueue, ProcessQueue> e
                : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()) {
            if (!e.getValue().isDropped()) {
                out.add(e.getKey());
            }
        }
        return out;
    }

    JsonObject state() {
        JsonArray assigned = new JsonArray();
        JsonArray offsets = new JsonArray();
        TreeSet<String> seen = new TreeSet<>();
        List<MessageQueue> queues = new ArrayList<>(assigned());
        queues.sort((a, b) -> a.getTopic().equals(b.getTopic()) ? Integer.compare(a.getQueueId(), b.getQueueId())
                : a.getTopic().compareTo(b.getTopic()));
        for (MessageQueue mq : queues) {
            if (!seen.add(mq.getTopic() + "\u0000" + mq.getQueueId())) {
                continue;
            }
            JsonArray q = new JsonArray();
            q.add(mq.getTopic());
            q.add(mq.getQueueId());
            assigned.add(q);
            long offset = offsets().readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
            if (offset >= 0) {
                JsonArray row = new JsonArray();
                row.add(mq.getTopic());
                row.add(mq.getQueueId());
                row.add(offset);
                offsets.add(row);
            }
        }
        JsonArray held = new JsonArray();
        for (MessageQueue mq : queues) {
            held.add(queueRow(mq));
        }
        JsonArray over = new JsonArray();
        for (Set<MessageQueue> all : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                .getTopicSubscribeInfoTable().values()) {
            for (MessageQueue mq : all) {
                over.add(queueRow(mq));
            }
        }
        return obj("client_id", clientId(), "assigned", assigned, "offsets", offsets, "queues", held,
                "subscribed", over, "locks", locks());
    }

    /**
     * An orderly consumer's broker locks as the client keeps them, from its process queues: [topic, queue id,
     * locked, the spec ms of the last lock the broker granted] (ProcessQueue.isLocked, getLastLockTimestamp: wall
     * ms of the client's clock). None for a concurrent consumer.
     */
    private JsonArray locks() {
        JsonArray out = new JsonArray();
        if (!orderly) {
            return out;
        }
        Clock clock = mode.wire.clock();
        long wallNow = System.currentTimeMillis();
        long specNow = clock.nowMs();
        for (Map.Entry<MessageQueue, ProcessQueue> e
                : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()) {
            ProcessQueue pq = e.getValue();
            if (pq.isDropped()) {
                continue;
            }
            JsonArray row = new JsonArray();
            row.add(e.getKey().getTopic());
            row.add(e.getKey().getQueueId());
            row.add(pq.isLocked());
            long last = pq.getLastLockTimestamp();
            row.add(last <= 0 ? null : specNow - Math.round((wallNow - last) / clock.timeScale));
            out.add(row);
        }
        return out;
    }

    /** [topic, broker name, queue id], as the client names the queue (the server's names). */
    private static JsonArray queueRow(MessageQueue mq) {
        JsonArray row = new JsonArray();
        row.add(mq.getTopic());
        row.add(mq.getBrokerName());
        row.add(mq.getQueueId());
        return row;
    }

    private OffsetStore offsets() {
        return offsets;
    }

    /** Every subscribed topic's queues are held as this client's last allocation says, from an allocation that
     * saw exactly {@code live} (clustering), or all of them (broadcasting): the client has rebalanced. Null then;
     * else what is missing, in one line (the queues held and the queues wanted, or the members it last saw). */
    String unsettledWith(Set<String> live) {
        if (stopped) {
            return null;
        }
        Map<String, Set<MessageQueue>> subscribed = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                .getTopicSubscribeInfoTable();
        Set<MessageQueue> held = assigned();
        for (String t : consumer.getDefaultMQPushConsumerImpl().getSubscriptionInner().keySet()) {
            Set<MessageQueue> want;
            if (broadcasting) {
                want = subscribed.get(t);
            } else {
                List<String> cids = lastCids.get(t);
                if (cids == null || !new HashSet<>(cids).equals(live)) {
                    return clientId() + " on " + t + ": its last allocation saw members " + cids + ", the group has "
                            + new TreeSet<>(live);
                }
                want = lastAllocation.get(t);
            }
            if (want == null) {
                return clientId() + " on " + t + ": no route to the topic's queues yet";
            }
            Set<MessageQueue> mine = new HashSet<>();
            for (MessageQueue mq : held) {
                if (mq.getTopic().equals(t)) {
                    mine.add(mq);
                }
            }
            if (!mine.equals(want)) {
                return clientId() + " on " + t + ": holds queues " + queueIds(mine) + ", its allocation gives it "
                        + queueIds(want) + (orderly && !broadcasting ? " (an orderly queue is held once the broker "
                        + "locked it for this client: RebalanceImpl.updateProcessQueueTableInRebalance)" : "");
            }
            Map<MessageQueue, ProcessQueue> table = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl()
                    .getProcessQueueTable();
            Set<MessageQueue> waiting = new HashSet<>();
            for (MessageQueue mq : mine) {
                ProcessQueue pq = table.get(mq);
                if (pq != null && !pulled.contains(pq)) {
                    waiting.add(mq);
                }
            }
            if (!waiting.isEmpty()) {
                return clientId() + " on " + t + ": queues " + queueIds(waiting) + " have not sent their first pull, "
                        + "so where they start is not known yet (FirstPulls)";
            }
        }
        return null;
    }

    private static TreeSet<Integer> queueIds(Set<MessageQueue> queues) {
        TreeSet<Integer> ids = new TreeSet<>();
        for (MessageQueue mq : queues) {
            ids.add(mq.getQueueId());
        }
        return ids;
    }

    // ---- stopping ----

    @Override
    void shutdown() {
        if (stopped) {
            return;
        }
        stopped = true;
        consumer.shutdown();
        emit("CONSUMER_STOP", obj("topic", topic, "group", group, "client_id", clientId(), "detail",
                Map.of("how", "shutdown")));
    }

    /**
     * The closest to a crash the Java client allows in a JVM that goes on: its consumption and pulls stop, its
     * connections close (the broker drops it, as when its process dies), and nothing of a clean shutdown runs: no
     * offset is persisted (the offset store turns deaf), no UNREGISTER_CLIENT is sent.
     */
    @Override
    void crash() {
        if (stopped) {
            return;
        }
        stopped = true;
        String id = clientId();
        offsets.deaf = true;
        MQClientInstance factory = consumer.getDefaultMQPushConsumerImpl().getmQClientFactory();
        for (ProcessQueue pq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().values()) {
            pq.setDropped(true);
        }
        consumer.getDefaultMQPushConsumerImpl().getConsumeMessageService().shutdown(0);
        try {
            java.lang.reflect.Field f = MQClientInstance.class.getDeclaredField("scheduledExecutorService");
            f.setAccessible(true);
            ((ScheduledExecutorService) f.get(factory)).shutdownNow();
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("rmqc java driver: crash of " + handle + ": the client's timers go on: " + e);
        }
        factory.getPullMessageService().shutdown(true);
        factory.getMQClientAPIImpl().shutdown();
        Map<String, String> detail = new LinkedHashMap<>();
        detail.put("crashed", "true");
        emit("REBALANCE", obj("group", group, "client_id", id, "detail", detail));
        emit("CONSUMER_STOP", obj("topic", topic, "group", group, "client_id", id, "detail", Map.of("how", "crash")));
    }

    // ---- the client's own decisions, watched ----

    /** AllocateMessageQueueByConfig with the list made of the subscribed topic's queues of some ids, for every
     * topic the client allocates (its retry topic gets its queue 0 if 0 is among them). */
    private static final class Configured implements AllocateMessageQueueStrategy {
        private final Set<Integer> ids;

        Configured(Set<Integer> ids) {
            this.ids = ids;
        }

        @Override
        public List<MessageQueue> allocate(String consumerGroup, String currentCID, List<MessageQueue> mqAll,
                                           List<String> cidAll) {
            List<MessageQueue> list = new ArrayList<>();
            for (MessageQueue mq : mqAll) {
                if (ids.contains(mq.getQueueId())) {
                    list.add(mq);
                }
            }
            AllocateMessageQueueByConfig inner = new AllocateMessageQueueByConfig();
            inner.setMessageQueueList(list);
            return inner.allocate(consumerGroup, currentCID, mqAll, cidAll);
        }

        @Override
        public String getName() {
            return "CONFIG";
        }
    }

    /**
     * Watches the client's requests for each held queue's first PULL_MESSAGE. Where a queue starts is computed just
     * before it: at the rebalance (RebalancePushImpl.computePullFromWhereWithException), and for an orderly queue
     * again at its first pull once the broker locked it (DefaultMQPushConsumerImpl.pullMessage, previouslyLocked).
     * With no stored offset that is two requests, QUERY_CONSUMER_OFFSET then, on QUERY_NOT_FOUND, GET_MAX_OFFSET
     * (CONSUME_FROM_LAST_OFFSET, OFFSET-01); from 5.1.0 a broker answers QUERY_NOT_FOUND for a queue with no
     * message yet (OFFSET-02), so a message sent between the two is skipped. A consumer is settled, and the harness
     * sends, only once every queue it holds has pulled.
     */
    private final class FirstPulls implements RPCHook {
        @Override
        public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
            if (request.getCode() != RequestCode.PULL_MESSAGE) {
                return;
            }
            CommandCustomHeader header = request.readCustomHeader();
            if (!(header instanceof PullMessageRequestHeader)) {
                return;
            }
            PullMessageRequestHeader pull = (PullMessageRequestHeader) header;
            List<Map.Entry<MessageQueue, ProcessQueue>> same = new ArrayList<>();
            for (Map.Entry<MessageQueue, ProcessQueue> e
                    : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().entrySet()) {
                MessageQueue mq = e.getKey();
                if (mq.getTopic().equals(pull.getTopic()) && pull.getQueueId() != null
                        && mq.getQueueId() == pull.getQueueId()) {
                    same.add(e);
                }
            }
            // one queue of that topic and id on each of several brokers: the one whose master was asked (a pull that
            // went to a slave marks none, and the harness waits its bound)
            MQClientInstance factory = consumer.getDefaultMQPushConsumerImpl().getmQClientFactory();
            for (Map.Entry<MessageQueue, ProcessQueue> e : same) {
                if (same.size() == 1 || (factory != null && remoteAddr != null
                        && remoteAddr.equals(factory.findBrokerAddressInPublish(e.getKey().getBrokerName())))) {
                    pulled.add(e.getValue());
                }
            }
        }

        @Override
        public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        }
    }

    /** The client's allocation strategy, unchanged; what it decided is kept and, when it changes, a REBALANCE. */
    private final class Watched implements AllocateMessageQueueStrategy {
        private final AllocateMessageQueueStrategy inner;

        Watched(AllocateMessageQueueStrategy inner) {
            this.inner = inner;
        }

        @Override
        public List<MessageQueue> allocate(String consumerGroup, String currentCID, List<MessageQueue> mqAll,
                                           List<String> cidAll) {
            List<MessageQueue> result = inner.allocate(consumerGroup, currentCID, mqAll, cidAll);
            if (mqAll != null && !mqAll.isEmpty()) {
                String t = mqAll.get(0).getTopic();
                Set<MessageQueue> now = result == null ? new HashSet<>() : new HashSet<>(result);
                Set<MessageQueue> before = lastAllocation.put(t, now);
                lastCids.put(t, new ArrayList<>(cidAll));
                if (!now.equals(before)) {
                    TreeSet<String> all = new TreeSet<>();
                    for (Set<MessageQueue> queues : lastAllocation.values()) {
                        for (MessageQueue mq : queues) {
                            all.add(mq.getTopic() + ":" + mq.getQueueId());
                        }
                    }
                    emit("REBALANCE", obj("group", group, "client_id", currentCID, "detail",
                            Map.of("queues", String.join(",", all), "strategy", inner.getName())));
                }
            }
            return result;
        }

        @Override
        public String getName() {
            return inner.getName();
        }
    }

    /**
     * The offset store the client would make itself (RemoteBrokerOffsetStore when clustering, LocalFileOffsetStore
     * when broadcasting: DefaultMQPushConsumerImpl.start), made when the client loads it; an OFFSET_COMMIT when the
     * in-memory offset of a queue grows past where it started.
     */
    private final class WatchedOffsetStore implements OffsetStore {
        private volatile OffsetStore inner;
        volatile boolean deaf;

        private OffsetStore inner() {
            if (inner == null) {
                synchronized (this) {
                    if (inner == null) {
                        MQClientInstance factory = consumer.getDefaultMQPushConsumerImpl().getmQClientFactory();
                        inner = broadcasting ? new LocalFileOffsetStore(factory, group)
                                : new RemoteBrokerOffsetStore(factory, group);
                    }
                }
            }
            return inner;
        }

        @Override public void load() throws MQClientException {
            inner().load();
        }

        @Override public void updateOffset(MessageQueue mq, long offset, boolean increaseOnly) {
            if (deaf) {
                return;
            }
            long before = inner().readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
            inner().updateOffset(mq, offset, increaseOnly);
            long after = inner().readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
            if (after > Math.max(before, 0)) {
                emit("OFFSET_COMMIT", obj("group", group, "client_id", clientId(), "topic", mq.getTopic(),
                        "queue_id", mq.getQueueId(), "queue_offset", after));
            }
        }

        @Override public long readOffset(MessageQueue mq, ReadOffsetType type) {
            return inner().readOffset(mq, type);
        }

        @Override public void persistAll(Set<MessageQueue> mqs) {
            if (!deaf) {
                inner().persistAll(mqs);
            }
        }

        @Override public void persist(MessageQueue mq) {
            if (!deaf) {
                inner().persist(mq);
            }
        }

        @Override public void removeOffset(MessageQueue mq) {
            inner().removeOffset(mq);
        }

        @Override public Map<MessageQueue, Long> cloneOffsetTable(String t) {
            return inner().cloneOffsetTable(t);
        }

        @Override public void updateConsumeOffsetToBroker(MessageQueue mq, long offset, boolean isOneway)
                throws RemotingException, MQBrokerException, InterruptedException, MQClientException {
            if (!deaf) {
                inner().updateConsumeOffsetToBroker(mq, offset, isOneway);
            }
        }
    }
}
