package rmqc.driver;

import com.google.gson.JsonObject;

import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Java 4.x client {@code org.apache.rocketmq:rocketmq-client} behind the protocol (profile remoting-4.x), against
 * the name server {@code --namesrv}: producers, transaction producers and push consumers
 * ({@link Remoting4xProducers}, {@link Remoting4xPushConsumer}); consumer_state from the client's own rebalance and
 * offset store; committed_offset through the client's QUERY_CONSUMER_OFFSET. Topics and groups are the harness's
 * (adapters/java_remoting.py sets them up through the name server's admin codes, as mqadmin would).
 *
 * <p>The client runs on the wall clock; the server may run scaled (rmqc serve --time-scale S: a spec second lasts
 * S wall seconds). The client's own periodic timers are set to the pace of the server's clock ({@link Timers});
 * the timers of its consumption (the orderly suspend time, the 5 s local resubmission) stay the client's, on the
 * wall clock: the harness reads them through {@code client_timer_scale = 1 / S}.
 */
public final class Remoting4xMode implements Mode {
    final Wire wire;
    final String namesrv;
    private final String version;
    final Timers timers;
    private final Map<String, Remoting4xClient> clients = new ConcurrentHashMap<>();
    private final AtomicInteger instances = new AtomicInteger();
    private final String instancePrefix = "rmqc-" + ProcessHandle.current().pid() + "-";
    private volatile MQClientInstance reader;
    private final Remoting4xReader stored = new Remoting4xReader(this);

    /** How long a consumer's start or stop waits, in wall ms, for the group's clients in this JVM to rebalance: a
     * loaded machine can take seconds (an orderly queue is taken once the broker locks it, an RPC of at most 1 s,
     * RebalanceImpl.lock; a failed one is tried again at the next periodic rebalance). */
    private static final long REBALANCE_WAIT_MS = 15_000;

    public Remoting4xMode(Wire wire, String address, Properties versions) {
        this.wire = wire;
        this.namesrv = address;
        this.version = versions.getProperty("rocketmq.client.version", "unknown");
        this.timers = new Timers(wire.clock().timeScale);
        timers.setSystemProperties();
    }

    /**
     * The client's own timers at the server's pace: a default of D wall ms becomes D × time scale, not below a floor
     * that keeps the client's requests within what a server on two cores answers. Each is a setting of the client.
     */
    static final class Timers {
        final double scale;
        /** ClientConfig.pollNameServerInterval (30 s): how often the client refreshes its routes. */
        final long pollNameServerMs;
        /** ClientConfig.heartbeatBrokerInterval (30 s): how often it sends its heart beat (the broker learns of a
         * producer's group from it: the transaction checks go there). */
        final long heartbeatMs;
        /** ClientConfig.persistConsumerOffsetInterval (5 s): how often a consumer persists its offsets. (Its first
         * persist comes 10 wall seconds after the start: MQClientInstance.startScheduledTask, fixed.) */
        final long persistOffsetMs;
        /** DefaultMQPushConsumerImpl.pullTimeDelayMillsWhenException (3 s): the pause after a failed pull (and an
         * orderly queue's pull while not locked). */
        final long pullDelayOnExceptionMs;
        /** rocketmq.client.rebalance.waitInterval (20 s): the periodic rebalance. */
        final long rebalanceWaitMs;
        /** rocketmq.client.rebalance.lockInterval (20 s): how often an orderly consumer renews its queue locks; the
         * broker's lock lives 60 s of its clock (rocketmq.broker.rebalance.lockMaxLiveTime). */
        final long lockIntervalMs;
        /** rocketmq.client.rebalance.lockMaxLiveTime (30 s): how long the client trusts a lock it renewed. */
        final long lockMaxLiveMs;
        /** rocketmq.client.unlockDelayTimeMills (20 s): an orderly queue taken away mid-consumption unlocks later. */
        final long unlockDelayMs;

        Timers(double scale) {
            this.scale = scale;
            pollNameServerMs = scaled(30_000, 200);
            heartbeatMs = scaled(30_000, 200);
            persistOffsetMs = scaled(5_000, 100);
            pullDelayOnExceptionMs = scaled(3_000, 50);
            rebalanceWaitMs = scaled(20_000, 200);
            lockIntervalMs = scaled(20_000, 200);
            lockMaxLiveMs = scaled(30_000, 300);
            unlockDelayMs = scaled(20_000, 200);
        }

        long scaled(long defaultMs, long floorMs) {
            return Math.max(floorMs, Math.min(defaultMs, Math.round(defaultMs * scale)));
        }

        /** Read by the client's classes when they load: set before any client is made. The client's log goes to
         * a folder of its own (never standard output, which is the protocol's), at WARN; broadcasting offsets
         * (LocalFileOffsetStore) to a fresh folder, so no run reads another's. */
        void setSystemProperties() {
            System.setProperty("rocketmq.client.rebalance.waitInterval", Long.toString(rebalanceWaitMs));
            System.setProperty("rocketmq.client.rebalance.lockInterval", Long.toString(lockIntervalMs));
            System.setProperty("rocketmq.client.rebalance.lockMaxLiveTime", Long.toString(lockMaxLiveMs));
            System.setProperty("rocketmq.client.unlockDelayTimeMills", Long.toString(unlockDelayMs));
            String tmp = System.getProperty("java.io.tmpdir");
            String own = "rmqc-java-driver-" + ProcessHandle.current().pid();
            try {
                File dir = Files.createTempDirectory(own).toFile();
                System.setProperty("rocketmq.client.logRoot", new File(dir, "logs").getPath());
                System.setProperty("rocketmq.client.localOffsetStoreDir", new File(dir, "offsets").getPath());
            } catch (java.io.IOException e) {
                System.setProperty("rocketmq.client.logRoot", new File(tmp, own + "-logs").getPath());
                System.setProperty("rocketmq.client.localOffsetStoreDir", new File(tmp, own + "-offsets").getPath());
            }
            System.setProperty("rocketmq.client.logLevel", "WARN");
            System.setProperty("rocketmq.client.logUseSlf4j", "false");
        }
    }

    /** Every client: the name server, an instance of its own, the timers. */
    void configure(ClientConfig c) {
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instancePrefix + instances.incrementAndGet());
        c.setPollNameServerInterval((int) timers.pollNameServerMs);
        c.setHeartbeatBrokerInterval((int) timers.heartbeatMs);
        c.setPersistConsumerOffsetInterval((int) timers.persistOffsetMs);
    }

    @Override public String driverName() { return "rocketmq-client"; }
    @Override public String version() { return version; }
    @Override public String profile() { return "remoting-4.x"; }

    @Override
    public List<String> capabilities() {
        return List.of("send.sync", "send.async", "send.oneway", "send.batch", "send.orderly", "delay.level",
                "consumer.push4x.concurrent", "consumer.push4x.orderly", "consumer.push4x.broadcast",
                "consumer.suspend_time", "consumer.allocation", "consumer.filter.tag", "consumer.filter.sql", "transactions",
                "observe.queue_id", "observe.offset", "observe.client_offsets", "observe.stored",
                "observe.properties", "send.latency_fault", "consumer.broker_locks", "sdk.java4x");
    }

    @Override
    public JsonObject serve(Session session, String cmd, JsonObject m) throws Exception {
        switch (cmd) {
            case "producer":
            case "transaction_producer": {
                String handle = m.get("handle").getAsString();
                String group = Remoting4xClient.str(m, "group", cmd.equals("producer") ? "P" : "TP");
                JsonObject options = Remoting4xClient.options(m).deepCopy();
                if (m.has("topics")) {
                    options.add("topics", m.get("topics"));
                }
                clients.put(handle, new Remoting4xProducers.ProducerClient(this, session, handle, group, options,
                        cmd.equals("transaction_producer")));
                return new JsonObject();
            }
            case "push_consumer_4x": {
                String handle = m.get("handle").getAsString();
                Remoting4xPushConsumer c = new Remoting4xPushConsumer(this, session, handle, m.get("group").getAsString(),
                        m.get("topic").getAsString(), Remoting4xClient.options(m));
                clients.put(handle, c);
                return unsettledReply(awaitRebalance(c.group));
            }
            case "send":
                return producer(m).send(m);
            case "send_batch":
                return producer(m).sendBatch(m);
            case "send_in_transaction":
                return producer(m).sendInTransaction(m);
            case "shutdown":
            case "crash": {
                Remoting4xClient c = client(m);
                if (cmd.equals("shutdown")) {
                    c.shutdown();
                } else {
                    c.crash();
                }
                clients.remove(c.handle);
                return c instanceof Remoting4xPushConsumer ? unsettledReply(awaitRebalance(c.group))
                        : new JsonObject();
            }
            case "consumer_state": {
                Remoting4xClient c = client(m);
                if (!(c instanceof Remoting4xPushConsumer)) {
                    throw new NotApplicable("handle " + c.handle + " is not a push consumer");
                }
                return ((Remoting4xPushConsumer) c).state();
            }
            case "read_stored":
                return stored.readStored(m.get("topic").getAsString());
            case "stored_messages":
                return stored.storedMessages(m.get("topic").getAsString());
            case "committed_offset":
                return committedOffset(m.get("group").getAsString(), m.get("topic").getAsString(),
                        m.get("queue_id").getAsInt());
            case "simple_consumer_5x":
            case "push_consumer_5x":
            case "receive":
            case "ack":
            case "change_invisible_duration":
                throw new NotApplicable("rocketmq-client is the 4.x remoting client: it has no " + cmd);
            default:
                throw new NotApplicable("rocketmq-client has no " + cmd + " in this driver (topics, groups and the "
                        + "broker are set up by the harness through the name server)");
        }
    }

    private Remoting4xClient client(JsonObject m) {
        String handle = Remoting4xClient.str(m, "handle");
        Remoting4xClient c = handle == null ? null : clients.get(handle);
        if (c == null) {
            throw new NotApplicable("no client has the handle " + handle);
        }
        return c;
    }

    private Remoting4xProducers.ProducerClient producer(JsonObject m) {
        Remoting4xClient c = client(m);
        if (!(c instanceof Remoting4xProducers.ProducerClient)) {
            throw new NotApplicable("handle " + c.handle + " is not a producer");
        }
        return (Remoting4xProducers.ProducerClient) c;
    }

    /**
     * A consumer that starts or stops changes its group: each member rebalances on its own when the broker tells
     * it (NOTIFY_CONSUMER_IDS_CHANGED). The command answers once every member in this JVM holds what its own
     * allocation over the group's present members gives it (bounded: a member elsewhere is not waited for). Null
     * then; else, after {@link #REBALANCE_WAIT_MS}, what the first unsettled member lacks.
     */
    private String awaitRebalance(String group) throws InterruptedException {
        long started = System.currentTimeMillis();
        String unsettled = null;
        while (System.currentTimeMillis() < started + REBALANCE_WAIT_MS) {
            List<Remoting4xPushConsumer> members = new ArrayList<>();
            Set<String> live = new HashSet<>();
            for (Remoting4xClient c : clients.values()) {
                if (c instanceof Remoting4xPushConsumer && c.group.equals(group) && !((Remoting4xPushConsumer) c).stopped) {
                    members.add((Remoting4xPushConsumer) c);
                    live.add(((Remoting4xPushConsumer) c).clientId());
                }
            }
            unsettled = null;
            for (Remoting4xPushConsumer c : members) {
                unsettled = c.unsettledWith(live);
                if (unsettled != null) {
                    break;
                }
            }
            if (unsettled == null) {
                return null;
            }
            Thread.sleep(5);
        }
        return "group " + group + " had not rebalanced " + (System.currentTimeMillis() - started) + " wall ms after "
                + "a member started or stopped: " + unsettled;
    }

    /** The reply to a consumer's start or stop: {@code unsettled} says what the group's rebalance had not done. */
    private static JsonObject unsettledReply(String unsettled) {
        return Wire.obj("unsettled", unsettled);
    }

    /** The offset the broker stores for a group on a queue, as the client's RemoteBrokerOffsetStore reads it
     * (MQClientAPIImpl.queryConsumerOffset); QUERY_NOT_FOUND is none. */
    private JsonObject committedOffset(String group, String topic, int queueId) throws Exception {
        MQClientInstance instance = reader();
        TopicRouteData route = instance.getMQClientAPIImpl().getTopicRouteInfoFromNameServer(topic, 3000);
        String address = null;
        for (QueueData q : route.getQueueDatas()) {
            if (queueId < Math.max(q.getReadQueueNums(), q.getWriteQueueNums())) {
                for (BrokerData b : route.getBrokerDatas()) {
                    if (b.getBrokerName().equals(q.getBrokerName())) {
                        address = b.selectBrokerAddr();
                    }
                }
                break;
            }
        }
        if (address == null) {
            throw new NotApplicable("no broker serves " + topic + " queue " + queueId);
        }
        QueryConsumerOffsetRequestHeader header = new QueryConsumerOffsetRequestHeader();
        header.setConsumerGroup(group);
        header.setTopic(topic);
        header.setQueueId(queueId);
        JsonObject r = new JsonObject();
        try {
            r.addProperty("offset", instance.getMQClientAPIImpl().queryConsumerOffset(address, header, 3000));
        } catch (MQBrokerException e) {
            if (e.getResponseCode() != ResponseCode.QUERY_NOT_FOUND) {
                throw e;
            }
            r.add("offset", com.google.gson.JsonNull.INSTANCE);
        }
        return r;
    }

    /** A client instance of no group, for the queries above (started once). */
    private synchronized MQClientInstance reader() throws MQClientException {
        if (reader == null) {
            ClientConfig config = new ClientConfig();
            configure(config);
            MQClientInstance instance = MQClientManager.getInstance().getOrCreateMQClientInstance(config);
            instance.start();
            reader = instance;
        }
        return reader;
    }

    @Override
    public int errorCode(Throwable e) {
        if (e instanceof MQClientException) {
            return ((MQClientException) e).getResponseCode();
        }
        if (e instanceof MQBrokerException) {
            return ((MQBrokerException) e).getResponseCode();
        }
        return -1;
    }

    /** MQClientException("Failed to initiate the MessageBatch", cause): DefaultMQProducer.batch's refusal. */
    private static boolean batchRefused(Throwable e) {
        return e instanceof MQClientException
                && "Failed to initiate the MessageBatch".equals(((MQClientException) e).getErrorMessage());
    }

    @Override
    public String errorType(Throwable e) {
        return batchRefused(e) ? "BatchRejected" : "RocketMQError";
    }

    /** The client's own words (getErrorMessage, without the FAQ link); a refused batch: its cause's. */
    @Override
    public String errorMessage(Throwable e) {
        if (batchRefused(e)) {
            return e.getCause() == null ? "" : e.getCause().getMessage();
        }
        if (e instanceof MQClientException) {
            return ((MQClientException) e).getErrorMessage();
        }
        if (e instanceof MQBrokerException) {
            return ((MQBrokerException) e).getErrorMessage();
        }
        return null;
    }

    @Override
    public void close(Session session) {
        for (Remoting4xClient c : new ArrayList<>(clients.values())) {
            if (c.session == session) {
                stop(c);
            }
        }
    }

    @Override
    public void closeAll() {
        for (Remoting4xClient c : new ArrayList<>(clients.values())) {
            stop(c);
        }
        MQClientInstance r = reader;
        if (r != null) {
            r.shutdown();
        }
        stored.close();
    }

    private void stop(Remoting4xClient c) {
        clients.remove(c.handle);
        try {
            c.shutdown();
        } catch (RuntimeException e) {
            System.err.println("rmqc java driver: shutting " + c.handle + " down: " + e);
        }
    }
}
