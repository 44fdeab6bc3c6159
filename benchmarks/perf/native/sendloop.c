/* The floor of the load generator's send delay: the same open-loop schedule as
 * benchmarks/load.py, in C on the same librdkafka, with nothing else on the sending thread
 * (no ledger, no Python). benchmarks/perf/producer_throughput.py runs it beside the generator
 * at the same rates, so the generator's send delay can be told from what the machine allows.
 *
 *   sendloop BOOTSTRAP TOPIC RATE SECONDS START_NS WARMUP_NS SIZE KEYS DELAYS_FILE [K=V ...]
 *
 * RATE 0: unthrottled, as fast as the client takes messages, until START_NS + SECONDS.
 * Otherwise message i is intended at START_NS + i * 1e9 / RATE; its send delay (actual -
 * intended, ns, int64) is written to DELAYS_FILE for every message intended at or after
 * START_NS + WARMUP_NS. K=V: librdkafka producer properties. The sending thread asks for nice
 * -20, as the generator's does. Prints one JSON line: sent, acked, failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long acked, failed;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque) {
    (void)rk, (void)opaque;
    if (msg->err) failed++;
    else acked++;
}

static void quiet(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk, (void)level, (void)fac, (void)buf;
}

static void die(const char *what, const char *why) {
    fprintf(stderr, "sendloop: %s: %s\n", what, why);
    exit(2);
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
    char err[512];
    if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(key, err);
}

int main(int argc, char **argv) {
    if (argc < 10) die("usage", "BOOTSTRAP TOPIC RATE SECONDS START_NS WARMUP_NS SIZE KEYS DELAYS_FILE [K=V ...]");
    const char *topic_name = argv[2], *delays_path = argv[9];
    double rate = atof(argv[3]), seconds = atof(argv[4]);
    int64_t start = atoll(argv[5]), warmup = atoll(argv[6]);
    size_t size = (size_t)atol(argv[7]);
    long keys = atol(argv[8]);
    int64_t end = start + (int64_t)(seconds * 1e9);

    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    set(conf, "bootstrap.servers", argv[1]);
    for (int i = 10; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) die(argv[i], "expected K=V");
        *eq = '\0';
        set(conf, argv[i], eq + 1);
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_log_cb(conf, quiet);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) die("rd_kafka_new", err);
    rd_kafka_topic_t *topic = rd_kafka_topic_new(rk, topic_name, NULL);
    const struct rd_kafka_metadata *metadata;  /* connections before the first intended time */
    if (rd_kafka_metadata(rk, 0, topic, &metadata, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_metadata_destroy(metadata);
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -20);  /* as load.py; fails quietly unprivileged */

    int64_t interval = rate > 0 ? (int64_t)(1e9 / rate) : 0;
    long scheduled = rate > 0 ? (long)((end - start + interval - 1) / interval) : 0;
    int64_t *delays = calloc(scheduled > 0 ? (size_t)scheduled : 1, sizeof *delays);
    char *payload = calloc(size > 24 ? size : 24, 1), key[24];
    if (!delays || !payload) die("calloc", strerror(errno));
    long seq = 0, measured = 0;

    for (;;) {
        int64_t now = now_ns();
        if (rate > 0) {
            if (seq >= scheduled) break;
            int64_t intended = start + seq * interval;
            if (intended > now) {
                struct timespec ts = {intended / 1000000000LL, intended % 1000000000LL};
                clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
                now = now_ns();
            }
        } else if (now >= end) {
            break;
        }
        /* every message whose intended time has come (unthrottled: one) */
        while (rate > 0 ? seq < scheduled && start + seq * interval <= now : 1) {
            memcpy(payload, &seq, sizeof seq);
            memcpy(payload + 8, &now, sizeof now);
            int key_len = keys > 0 ? snprintf(key, sizeof key, "k%ld", seq % keys) : 0;
            if (rd_kafka_produce(topic, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, payload, size,
                                 key_len ? key : NULL, (size_t)key_len, NULL) == -1) {
                rd_kafka_poll(rk, 5);  /* queue full: let it drain; intended times keep marching */
                break;
            }
            if (rate > 0 && start + seq * interval >= start + warmup) delays[measured++] = now - (start + seq * interval);
            seq++;
            if (rate <= 0) break;
            now = now_ns();
        }
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 60000);
    FILE *out = fopen(delays_path, "wb");
    if (!out || fwrite(delays, sizeof *delays, (size_t)measured, out) != (size_t)measured || fclose(out))
        die(delays_path, strerror(errno));
    printf("{\"sent\": %ld, \"acked\": %ld, \"failed\": %ld}\n", seq, acked, failed);
    rd_kafka_topic_destroy(topic);
    rd_kafka_destroy(rk);
    return 0;
}
