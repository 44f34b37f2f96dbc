package rmqc.driver;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a topic stores, read as a user reads it: an ordinary pull consumer ({@code DefaultMQPullConsumer}) of a
 * group of its own pulls every queue of the topic from its first offset to its last, with the subscription
 * {@code *} (a retry or a dead-letter topic too: nothing is reset, the copies show their stored topic and every
 * property the broker keeps). Serves read_stored (observe.stored, observe.properties) and stored_messages.
 */
final class Remoting4xReader {
    private final Remoting4xMode mode;
    private DefaultMQPullConsumer consumer;

    Remoting4xReader(Remoting4xMode mode) {
        this.mode = mode;
    }

    private synchronized DefaultMQPullConsumer consumer() throws MQClientException {
        if (consumer == null) {
            DefaultMQPullConsumer c = new DefaultMQPullConsumer("rmqc_stored_reader");
            mode.configure(c);
            c.start();
            consumer = c;
        }
        return consumer;
    }

    /** Every message the topic stores so far; an unknown topic stores nothing. */
    List<MessageExt> read(String topic) throws Exception {
        DefaultMQPullConsumer c = consumer();
        Set<MessageQueue> queues;
        try {
            queues = c.fetchSubscribeMessageQueues(topic);
        } catch (MQClientException e) { // no route: the name server knows no such topic
            return new ArrayList<>();
        }
        List<MessageQueue> sorted = new ArrayList<>(queues);
        sorted.sort((a, b) -> a.getBrokerName().equals(b.getBrokerName()) ? Integer.compare(a.getQueueId(), b.getQueueId())
                : a.getBrokerName().compareTo(b.getBrokerName()));
        List<MessageExt> out = new ArrayList<>();
        for (MessageQueue mq : sorted) {
            long offset = c.minOffset(mq);
            long end = c.maxOffset(mq);
            while (offset < end) {
                PullResult r = c.pull(mq, "*", offset, 32, 3000);
                if (r.getPullStatus() == PullStatus.FOUND && r.getMsgFoundList() != null) {
                    out.addAll(r.getMsgFoundList());
                }
                if (r.getNextBeginOffset() <= offset) {
                    break;
                }
                offset = r.getNextBeginOffset();
            }
        }
        return out;
    }

    /** The properties the broker stored: without the two the client adds to what it pulls (PullAPIWrapper). */
    private static Map<String, String> stored(MessageExt m) {
        Map<String, String> p = new HashMap<>(m.getProperties() == null ? Map.of() : m.getProperties());
        p.remove(MessageConst.PROPERTY_MIN_OFFSET);
        p.remove(MessageConst.PROPERTY_MAX_OFFSET);
        return p;
    }

    JsonObject readStored(String topic) throws Exception {
        JsonArray views = new JsonArray();
        for (MessageExt m : read(topic)) {
            JsonObject properties = new JsonObject();
            for (Map.Entry<String, String> e : stored(m).entrySet()) {
                properties.addProperty(e.getKey(), e.getValue());
            }
            byte[] body = m.getBody() == null ? new byte[0] : m.getBody();
            views.add(Remoting4xClient.obj("msg_id", m.getMsgId(), "topic", m.getTopic(), "key", m.getKeys(),
                    "tags", m.getTags(), "body", Base64.getEncoder().encodeToString(body),
                    "reconsume_times", m.getReconsumeTimes(), "delivery_attempt", m.getReconsumeTimes() + 1,
                    "queue_id", m.getQueueId(), "queue_offset", m.getQueueOffset(), "stored_topic", m.getTopic(),
                    "properties", properties));
        }
        return Remoting4xClient.obj("messages", views);
    }

    JsonObject storedMessages(String topic) throws Exception {
        JsonArray records = new JsonArray();
        for (MessageExt m : read(topic)) {
            JsonObject properties = new JsonObject();
            for (Map.Entry<String, String> e : stored(m).entrySet()) {
                properties.addProperty(e.getKey(), e.getValue());
            }
            records.add(Remoting4xClient.obj("msg_id", m.getMsgId(), "topic", m.getTopic(), "queue_id", m.getQueueId(),
                    "queue_offset", m.getQueueOffset(), "reconsume_times", m.getReconsumeTimes(),
                    "properties", properties));
        }
        return Remoting4xClient.obj("messages", records);
    }

    synchronized void close() {
        if (consumer != null) {
            consumer.shutdown();
            consumer = null;
        }
    }
}
