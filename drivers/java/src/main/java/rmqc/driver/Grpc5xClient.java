package rmqc.driver;

import java.io.Closeable;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.java.impl.ClientImpl;

/** One client of the Java 5.x SDK under a handle of the harness, with what the driver keeps beside it. */
final class Grpc5xClient {
    final Session session;
    final String kind;
    final Closeable client;
    final String group;
    /** A producer: the next sequence number of each message group ("" for none), for SEND_INVOKE's producer_seq. */
    final Map<String, AtomicInteger> seqByGroup = new ConcurrentHashMap<>();
    /** A simple consumer: every message view received, under each receipt handle it has had. */
    final Map<String, org.apache.rocketmq.client.java.message.MessageViewImpl> views = new ConcurrentHashMap<>();

    Grpc5xClient(Session session, String kind, Closeable client, String group) {
        this.session = session;
        this.kind = kind;
        this.client = client;
        this.group = group;
    }

    int nextSeq(String messageGroup) {
        return seqByGroup.computeIfAbsent(messageGroup == null ? "" : messageGroup, g -> new AtomicInteger())
                .getAndIncrement();
    }

    void close() throws IOException {
        client.close();
    }

    /** No termination notice: the client's RPC channels and timers stop, as when its process dies. */
    void crash() {
        if (client instanceof ClientImpl) {
            ((ClientImpl) client).getClientManager().stopAsync();
        }
    }
}
