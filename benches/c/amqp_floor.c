/* The floor anchor of the loop-overhead bench: a minimal synchronous AMQP 0-9-1 client on
 * librabbitmq (rabbitmq-c), doing what oemputx's loop does and nothing more. Each task is a
 * thread with its own connection and exclusive server-named reply queue: publish the request
 * with reply_to, correlation_id and message_id (delivery mode 1) to the default exchange,
 * then block until the reply with that correlation id arrives.
 *
 * Usage: amqp_floor HOST PORT USER PASSWORD VHOST QUEUE COUNT WARMUP TASKS BODYFILE
 * Prints "RATE_TPS CPU_US_PER_TRAN" for the measured window (all tasks between two
 * barriers; process CPU clock), as the bench's other raw loops do. Built by the bench with
 * `cc -O2 amqp_floor.c -lrabbitmq -lpthread`.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *host, *user, *pass, *vhost, *queue;
static int port;
static unsigned long count, warmup;
static int tasks;
static amqp_bytes_t body;
static pthread_barrier_t ready, done;

static void die(const char *what, amqp_rpc_reply_t r) {
  if (r.reply_type != AMQP_RESPONSE_NORMAL) {
    fprintf(stderr, "amqp_floor: %s failed (reply type %d)\n", what, r.reply_type);
    exit(1);
  }
}

static unsigned long share(unsigned long total, int t) {
  return total / tasks + ((unsigned long)t < total % tasks ? 1 : 0);
}

static void trips(amqp_connection_state_t c, amqp_bytes_t reply_q, int t, const char *prefix,
                  unsigned long n) {
  char id[64];
  for (unsigned long i = 0; i < n; i++) {
    int len = snprintf(id, sizeof id, "%s-%d-%lu", prefix, t, i);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
               AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    p.correlation_id = (amqp_bytes_t){(size_t)len, id};
    p.message_id = (amqp_bytes_t){(size_t)len, id};
    p.reply_to = reply_q;
    p.delivery_mode = 1;
    if (amqp_basic_publish(c, 1, amqp_empty_bytes, amqp_cstring_bytes(queue), 0, 0, &p, body) !=
        AMQP_STATUS_OK) {
      fprintf(stderr, "amqp_floor: publish failed\n");
      exit(1);
    }
    for (;;) {
      amqp_envelope_t e;
      amqp_maybe_release_buffers(c);
      amqp_rpc_reply_t r = amqp_consume_message(c, &e, NULL, 0);
      die("consume", r);
      int mine = e.message.properties._flags & AMQP_BASIC_CORRELATION_ID_FLAG &&
                 e.message.properties.correlation_id.len == (size_t)len &&
                 memcmp(e.message.properties.correlation_id.bytes, id, len) == 0;
      amqp_destroy_envelope(&e);
      if (mine) break;
    }
  }
}

static void *task(void *arg) {
  int t = (int)(long)arg;
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t *s = amqp_tcp_socket_new(c);
  if (!s || amqp_socket_open(s, host, port) != AMQP_STATUS_OK) {
    fprintf(stderr, "amqp_floor: cannot connect to %s:%d\n", host, port);
    exit(1);
  }
  die("login", amqp_login(c, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, user, pass));
  amqp_channel_open(c, 1);
  die("channel.open", amqp_get_rpc_reply(c));
  amqp_queue_declare_ok_t *q =
      amqp_queue_declare(c, 1, amqp_empty_bytes, 0, 0, 1, 1, amqp_empty_table);
  die("queue.declare", amqp_get_rpc_reply(c));
  amqp_bytes_t reply_q = amqp_bytes_malloc_dup(q->queue);
  amqp_basic_consume(c, 1, reply_q, amqp_empty_bytes, 0, 1, 1, amqp_empty_table);
  die("basic.consume", amqp_get_rpc_reply(c));
  trips(c, reply_q, t, "warm", share(warmup, t));
  pthread_barrier_wait(&ready);
  trips(c, reply_q, t, "floor", share(count, t));
  pthread_barrier_wait(&done);
  amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(c);
  amqp_bytes_free(reply_q);
  return NULL;
}

static double now(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 11) {
    fprintf(stderr, "usage: amqp_floor HOST PORT USER PASSWORD VHOST QUEUE COUNT WARMUP TASKS BODYFILE\n");
    return 2;
  }
  host = argv[1], port = atoi(argv[2]), user = argv[3], pass = argv[4], vhost = argv[5];
  queue = argv[6], count = strtoul(argv[7], 0, 10), warmup = strtoul(argv[8], 0, 10);
  tasks = atoi(argv[9]);
  FILE *f = fopen(argv[10], "rb");
  if (!f || tasks < 1 || count < 1) {
    fprintf(stderr, "amqp_floor: cannot read %s, or bad COUNT/TASKS\n", argv[10]);
    return 2;
  }
  static char buf[1 << 20];
  body.len = fread(buf, 1, sizeof buf, f);
  body.bytes = buf;
  fclose(f);
  pthread_barrier_init(&ready, NULL, tasks + 1);
  pthread_barrier_init(&done, NULL, tasks + 1);
  pthread_t th[tasks];
  for (int t = 0; t < tasks; t++) pthread_create(&th[t], NULL, task, (void *)(long)t);
  pthread_barrier_wait(&ready);
  double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
  pthread_barrier_wait(&done);
  double w = now(CLOCK_MONOTONIC) - w0, c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
  for (int t = 0; t < tasks; t++) pthread_join(th[t], NULL);
  printf("%f %f\n", count / w, c * 1e6 / count);
  return 0;
}
