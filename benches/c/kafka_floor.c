/* The floor anchor of the Kafka overhead bench: a minimal request/reply client on librdkafka,
 * doing what oemputx's Kafka loop does and nothing more. One task: produce each request to
 * partition 0 of the request topic with Spring Kafka's three reply headers (kafka_replyTopic,
 * kafka_replyPartition as a 4-byte big-endian int, kafka_correlationId), then poll the
 * reply topic's partition 0 (assigned, read from its end) until the reply with that
 * correlation id arrives. linger.ms=0 and acks=all (as rskafka sends), fetch.wait.max.ms as
 * the other loops' fetch wait.
 *
 * Usage: kafka_floor BOOTSTRAP TOPIC REPLY_TOPIC COUNT WARMUP FETCH_WAIT_MS BODYFILE
 * The reply topic must exist with one partition (the bench makes it). Prints
 * "RATE_TPS CPU_US_PER_TRAN" for the measured window (process CPU clock: librdkafka's own
 * threads included, as oemputx's figure includes its runtime's), as the bench's other loops
 * do. Built by the bench with `cc -O2 kafka_floor.c -lrdkafka`, against the librdkafka that
 * confluent-kafka's wheel carries where ci/services.sh installed it: Debian's 2.0.2 cannot
 * read tansu's ApiVersions answer ("Read underflow"), the wheel's newer one can.
 */
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, const char *why) {
  fprintf(stderr, "kafka_floor: %s: %s\n", what, why);
  exit(1);
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
  char err[256];
  if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) die(k, err);
}


static double secs(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 8) die("usage", "BOOTSTRAP TOPIC REPLY_TOPIC COUNT WARMUP FETCH_WAIT_MS BODYFILE");
  const char *servers = argv[1], *topic = argv[2], *reply = argv[3];
  unsigned long count = strtoul(argv[4], NULL, 10), warmup = strtoul(argv[5], NULL, 10);
  FILE *f = fopen(argv[7], "rb");
  if (!f) die("body", argv[7]);
  static char body[1 << 16];
  size_t body_len = fread(body, 1, sizeof body, f);
  fclose(f);

  char err[512];
  rd_kafka_conf_t *pc = rd_kafka_conf_new();
  set(pc, "bootstrap.servers", servers);
  set(pc, "linger.ms", "0");
  set(pc, "acks", "all");
  rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
  if (!producer) die("producer", err);

  rd_kafka_conf_t *cc = rd_kafka_conf_new();
  set(cc, "bootstrap.servers", servers);
  set(cc, "group.id", "oemputx-kafka-floor");
  set(cc, "enable.auto.commit", "false");
  set(cc, "fetch.wait.max.ms", argv[6]);
  set(cc, "fetch.min.bytes", "1");
  rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
  if (!consumer) die("consumer", err);
  /* From the partition's end as it is now, asked before the first request: an assignment
   * at OFFSET_END is resolved later, after the first reply may have come, which it then
   * skips. */
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t w = rd_kafka_query_watermark_offsets(consumer, reply, 0, &low, &high, 10000);
  if (w) die("the reply partition's end", rd_kafka_err2str(w));
  rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, reply, 0)->offset = high;
  if (rd_kafka_assign(consumer, parts)) die("assign", reply);
  rd_kafka_topic_partition_list_destroy(parts);

  int32_t partition_be = 0; /* big-endian 0 is 0 */
  double t0 = 0, c0 = 0;
  char id[64];
  for (unsigned long i = 0; i < warmup + count; i++) {
    if (i == warmup) {
      t0 = secs(CLOCK_MONOTONIC);
      c0 = secs(CLOCK_PROCESS_CPUTIME_ID);
    }
    int len = snprintf(id, sizeof id, "floor-%lu", i);
    rd_kafka_headers_t *h = rd_kafka_headers_new(3);
    rd_kafka_header_add(h, "kafka_replyTopic", -1, reply, (ssize_t)strlen(reply));
    rd_kafka_header_add(h, "kafka_replyPartition", -1, &partition_be, 4);
    rd_kafka_header_add(h, "kafka_correlationId", -1, id, len);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
        RD_KAFKA_V_VALUE(body, body_len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (e) die("produce", rd_kafka_err2str(e));
    rd_kafka_poll(producer, 0);
    double given_up = secs(CLOCK_MONOTONIC) + 30;
    for (;;) {
      rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 1000);
      if (secs(CLOCK_MONOTONIC) > given_up) die("a reply", "none within 30 s");
      if (!m) continue;
      int ours = 0;
      if (!m->err) {
        rd_kafka_headers_t *rh = NULL;
        const void *v;
        size_t vlen;
        if (!rd_kafka_message_headers(m, &rh) &&
            !rd_kafka_header_get_last(rh, "kafka_correlationId", &v, &vlen))
          ours = vlen == (size_t)len && !memcmp(v, id, vlen);
      }
      rd_kafka_message_destroy(m);
      if (ours) break;
    }
  }
  double elapsed = secs(CLOCK_MONOTONIC) - t0, cpu = secs(CLOCK_PROCESS_CPUTIME_ID) - c0;
  printf("%f %f\n", (double)count / elapsed, cpu * 1e6 / (double)count);
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  rd_kafka_flush(producer, 5000);
  rd_kafka_destroy(producer);
  return 0;
}
