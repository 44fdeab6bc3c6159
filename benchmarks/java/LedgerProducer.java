// One producer process of a run on Kafka's own Java producer (scenario client.producer_library:
// java), the same open-loop schedule and transactions as benchmarks/harness/producer.py's librdkafka
// producer, and the same messages (benchmarks/record/message.py, checked at start). It keeps no ledger itself: every outcome is one tab-separated row on
// stdout, which benchmarks/harness/java_load.py (its parent) writes into the run's ledgers.
//
//   R seq key intended_ns sent_ns ack_ns partition offset outcome error   one message's report
//   T txn first_seq messages intent fate begin_ns end_ns error            one transaction's end
//   X at_ns seq error                                                     the instance replaced
//   P sent                                                                messages sent so far
//
// "-" stands for a null. stdin carries "end <ns>" lines: the runner moved the end of the load.
// Usage: java -cp '<kafka-clients jars>/*:<classes>' LedgerProducer <settings.properties>
// (bench.* settings of the schedule; producer.* the client's own properties).

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.BitSet;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class LedgerProducer {
    private static final long NANO0 = System.nanoTime();
    private static final long EPOCH0;

    static {
        Instant at = Instant.now();
        EPOCH0 = at.getEpochSecond() * 1_000_000_000L + at.getNano();
    }

    /** Wall-clock nanoseconds, as time.time_ns() on the Python side, advancing monotonically. */
    static long now() {
        return EPOCH0 + (System.nanoTime() - NANO0);
    }

    private final BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    private final BitSet reported = new BitSet();
    private final Properties client = new Properties();
    // The message contract (benchmarks/record/message.py, given as bench.message.*): the header this
    // program writes, which it checks against the one given, and the key rule.
    static final String HEADER_FORMAT = ">8sIQq";  // tag, index (int), seq (long), sent_ns (long), big-endian
    static final int HEADER_SIZE = 28;
    private final long keyStride;
    private final String keyPrefix;
    private final byte[] tag;
    private final int index, size, keys;
    private final long startNs, intervalNs;
    private volatile long endNs;
    private final int txnMessages;       // 0: plain sends
    private final double abortRatio;
    private final long txnTimeoutMs;
    private final Random draws;
    private final String topic;
    private KafkaProducer<byte[], byte[]> producer;
    private volatile long sent;  // read by the rows' flusher thread

    // The open transaction: its number, first message, messages in it, when it began, and the
    // refusal that keeps it from committing ("" none).
    private long txnNumber, firstSeq = -1, inTxn, beginNs;
    private String broken = "";

    private LedgerProducer(Properties bench) {
        String header = bench.getProperty("bench.message.header_format");
        if (!HEADER_FORMAT.equals(header)
                || HEADER_SIZE != Integer.parseInt(bench.getProperty("bench.message.header_size", "-1"))) {
            throw new IllegalArgumentException("bench.message.header_format: the runner's message header is "
                + header + ", this program writes " + HEADER_FORMAT + " (" + HEADER_SIZE + " bytes)");
        }
        keyStride = Long.parseLong(bench.getProperty("bench.message.key_stride"));
        keyPrefix = bench.getProperty("bench.message.key_prefix");
        tag = bench.getProperty("bench.tag").getBytes(StandardCharsets.US_ASCII);
        index = Integer.parseInt(bench.getProperty("bench.index"));
        topic = bench.getProperty("bench.topic");
        size = Integer.parseInt(bench.getProperty("bench.message_size"));
        keys = Integer.parseInt(bench.getProperty("bench.keys"));
        startNs = Long.parseLong(bench.getProperty("bench.start_ns"));
        endNs = Long.parseLong(bench.getProperty("bench.end_ns"));
        intervalNs = Long.parseLong(bench.getProperty("bench.interval_ns"));
        txnMessages = Integer.parseInt(bench.getProperty("bench.txn.messages", "0"));
        abortRatio = Double.parseDouble(bench.getProperty("bench.txn.abort_ratio", "0"));
        txnTimeoutMs = Long.parseLong(bench.getProperty("bench.txn.timeout_ms", "60000"));
        draws = new Random(Long.parseLong(bench.getProperty("bench.txn.seed", "0")) * 1009 + index);
        for (String name : bench.stringPropertyNames()) {
            if (name.startsWith("producer.")) {
                client.setProperty(name.substring("producer.".length()), bench.getProperty(name));
            }
        }
        client.put("key.serializer", ByteArraySerializer.class.getName());
        client.put("value.serializer", ByteArraySerializer.class.getName());
    }

    private synchronized void row(Object... fields) {
        try {
            for (int i = 0; i < fields.length; i++) {
                if (i > 0) {
                    out.write('\t');
                }
                out.write(fields[i] == null ? "-" : fields[i].toString().replace('\t', ' ').replace('\n', ' '));
            }
            out.write('\n');
        } catch (IOException e) {
            throw new IllegalStateException("the ledger's pipe is gone", e);
        }
    }

    private synchronized void flushRows() throws IOException {
        row("P", sent);
        out.flush();
    }

    /** A report's outcome: indeterminate where the write may have reached the log anyway. */
    static String outcome(Exception e) {
        if (e == null) {
            return "acked";
        }
        boolean maybeWritten = e instanceof TimeoutException || e instanceof NetworkException
            || e instanceof DisconnectException || e instanceof NotEnoughReplicasAfterAppendException
            || !(e instanceof ApiException);  // e.g. the instance closed with the batch in flight
        return maybeWritten ? "indeterminate" : "failed";
    }

    static String name(Exception e) {
        return e.getClass().getSimpleName();
    }

    private long keyOf(long seq) {
        return keys > 0 ? (index * keyStride + seq) % keys : -1;
    }

    private long intended(long seq) {
        return startNs + seq * intervalNs;
    }

    private long scheduled() {
        return Math.floorDiv(endNs - startNs + intervalNs - 1, intervalNs);
    }

    private byte[] value(long seq, long sentNs) {
        ByteBuffer buf = ByteBuffer.allocate(Math.max(size, HEADER_SIZE));  // big-endian: HEADER_FORMAT
        buf.put(tag).putInt(index).putLong(seq).putLong(sentNs);
        return buf.array();
    }

    private Callback report(long seq, long intendedNs, long sentNs) {
        return (metadata, error) -> {
            long ack = now();
            synchronized (reported) {
                reported.set((int) seq);
            }
            if (error == null) {
                row("R", seq, keyOf(seq), intendedNs, sentNs, ack, metadata.partition(),
                    metadata.hasOffset() ? metadata.offset() : null, "acked", null);
            } else {
                row("R", seq, keyOf(seq), intendedNs, sentNs, ack, null, null, outcome(error), name(error));
            }
        };
    }

    private void open() {
        producer = new KafkaProducer<>(client);
        if (txnMessages == 0) {
            return;
        }
        long deadline = System.nanoTime() + txnTimeoutMs * 1_000_000L;
        while (true) {  // a coordinator still loading or being elected: retried
            try {
                producer.initTransactions();
                return;
            } catch (TimeoutException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
        }
    }

    /** What an application does once the instance is unusable: close it, take a new one. */
    private void replace(String why, long seq) {
        long at = now();
        producer.close(Duration.ZERO);  // its unfinished batches are reported failed by the client
        row("X", at, seq, why);
        open();
    }

    /** Send message `seq` now; false when it was not sent (send it again, after what stopped it). */
    private boolean send(long seq) {
        long key = keyOf(seq);
        try {
            if (txnMessages > 0 && firstSeq < 0) {
                producer.beginTransaction();
                firstSeq = seq;
                inTxn = 0;
                beginNs = now();
                broken = "";
            }
            long sentNs = now();
            producer.send(new ProducerRecord<>(topic, key < 0 ? null : (keyPrefix + key).getBytes(StandardCharsets.US_ASCII),
                value(seq, sentNs)), report(seq, intended(seq), sentNs));
        } catch (KafkaException e) {
            if (txnMessages == 0 || firstSeq < 0) {  // plain sends, or no transaction could begin
                replace(name(e) + ": " + e.getMessage(), seq);
            } else {
                broken = name(e) + ": " + e.getMessage();
            }
            return false;
        }
        inTxn++;
        sent++;
        return true;
    }

    private boolean txnFull() {
        return firstSeq >= 0 && (inTxn >= txnMessages || !broken.isEmpty());
    }

    /** Commit or abort the open transaction as drawn; its row. Returns nothing: an end that cannot
     * be confirmed leaves the transaction unknown and the instance replaced. */
    private void endTxn(long seq) {
        if (firstSeq < 0) {
            return;
        }
        if (inTxn == 0) {  // begun, nothing in it: nothing at stake
            try {
                producer.abortTransaction();
            } catch (KafkaException e) {
                replace(name(e) + ": " + e.getMessage(), seq);
            }
            firstSeq = -1;
            return;
        }
        String intent = draws.nextDouble() < abortRatio ? "abort" : "commit";
        boolean commit = intent.equals("commit") && broken.isEmpty();
        String fate, error = broken.isEmpty() ? null : broken;
        long deadline = System.nanoTime() + txnTimeoutMs * 1_000_000L;
        while (true) {
            try {
                if (commit) {
                    producer.commitTransaction();
                    fate = "committed";
                } else {
                    producer.abortTransaction();
                    fate = "aborted";
                }
                break;
            } catch (TimeoutException e) {  // the client allows the same call again
                error = name(e) + ": " + e.getMessage();
                if (System.nanoTime() > deadline) {
                    fate = "unknown";
                    break;
                }
            } catch (KafkaException e) {
                error = name(e) + ": " + e.getMessage();
                if (!commit) {
                    fate = "unknown";
                    break;
                }
                commit = false;  // an abortable error: abort; a fatal one fails the abort too
            }
        }
        row("T", txnNumber++, firstSeq, inTxn, intent, fate, beginNs, now(), error);
        firstSeq = -1;
        if (fate.equals("unknown")) {
            replace(error, seq);
        }
    }

    private void run() throws Exception {
        Thread ends = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.startsWith("end ")) {
                        endNs = Math.max(endNs, Long.parseLong(line.substring(4).trim()));
                    }
                }
            } catch (IOException e) {
                // the parent is gone: it kills this process too
            }
        }, "end-of-load");
        ends.setDaemon(true);
        ends.start();
        Thread flusher = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(100);
                    flushRows();
                } catch (Exception e) {
                    return;
                }
            }
        }, "rows");
        flusher.setDaemon(true);
        flusher.start();

        open();
        producer.partitionsFor(topic);  // connections and the topic's metadata before the first intended send
        long seq = 0;
        while (seq < scheduled()) {
            long delay = intended(seq) - now();
            if (delay > 0) {
                Thread.sleep(delay / 1_000_000L, (int) (delay % 1_000_000L));
            }
            while (seq < scheduled() && intended(seq) <= now()) {  // every message due
                if (txnMessages > 0 && txnFull()) {
                    endTxn(seq);
                }
                if (send(seq)) {
                    seq++;
                }
            }
        }
        if (txnMessages > 0) {
            endTxn(seq);
        }
        producer.flush();
        producer.close(Duration.ofSeconds(60));
        synchronized (reported) {
            for (int s = reported.nextClearBit(0); s < seq; s = reported.nextClearBit(s + 1)) {
                row("R", s, keyOf(s), intended(s), null, null, null, null, "indeterminate", "_NO_REPORT");
            }
        }
        flushRows();
    }

    public static void main(String[] args) throws Exception {
        Properties bench = new Properties();
        try (FileReader in = new FileReader(args[0], StandardCharsets.UTF_8)) {
            bench.load(in);
        }
        new LedgerProducer(bench).run();
    }
}
