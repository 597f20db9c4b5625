/* A hold-out AMQP 0-9-1 responder in C (librabbitmq, not oemputx's client) whose CPU per
 * message is known function by function: each request runs parse_request() for --a-us and
 * render_reply() for --b-us microseconds of CPU, each varied by ±--jitter (a fraction, drawn
 * uniformly per message), then replies to the request's reply_to with its correlation id.
 *
 * It measures what each function really took with its thread's CPU clock, around each call
 * (outside the two functions' frames), and on SIGTERM writes that truth to --truth PATH as
 * one JSON line: {"messages":N,"parse_request_us":…,"render_reply_us":…} per message. The
 * profile's tests (tests/it/profile.rs) and lab/profile-accuracy.sh compare oemputx --profile's
 * µs per message for each function with it.
 *
 *   gcc -O2 -g -fno-omit-frame-pointer -o burn_responder lab/holdout/burn_responder.c -lrabbitmq
 *   burn_responder --input-queue Q [--url amqp://guest:guest@127.0.0.1:5672] \
 *                  [--a-us 60] [--b-us 20] [--jitter 0.5] [--ns-per-byte 0] [--truth PATH]
 *                  [--trace PATH]
 *
 * --ns-per-byte N: parse_request burns N ns more per byte of the request, so that a request's
 * cost is a known function of its size (compare's tests vary --msg-size against it). The
 * truth then also holds "by_size": each request size's whole CPU per message (the thread's
 * CPU clock from the end of the previous message to the end of this one: its receive, both
 * functions, its reply and its ack), for up to 8 sizes.
 *
 * --iterations-per-us N: burn N spin iterations per µs asked, instead of the speed this
 * process measures at its start. Each process calibrates alone, at whatever its start meets:
 * beside busy loops two processes of the same --a-us differed in their work per message by
 * up to a fifth, a bias of each process that a gate reads as noise. With a fixed N the work
 * per message is fixed, and what it costs in CPU varies only as the machine does.
 * --calibrate K: measure the speed K times, print the fastest (the least disturbed) as
 * iterations per µs, and exit.
 *
 * --write-bytes N --write-file PATH: after its two functions, each message appends N bytes to
 * PATH and fsyncs it (--write-bytes without --write-file: a file in the current folder).
 * --leak-bytes N: each message also allocates N bytes, touches every page and never frees them.
 * The truth then holds "own": the process's own counters per message from its first message to
 * its last, read after every message from /proc/self/io (write_bytes, syscw, read_bytes, syscr),
 * getrusage (ru_nvcsw, ru_nivcsw) and /proc/self/status (VmRSS), and its own count of fsyncs:
 * oemputx's figures beyond CPU are checked against them (tests/it/beyond_cpu.rs).
 *
 * --trace PATH: every 20 ms or so, a line "WALL_NS MESSAGES PROCESS_CPU_NS" (the ladder's
 * tests read the responder's own CPU per message over each step's window from it).
 *
 * The queue and URL also come from OEMPUTX_QUEUE/OEMPUTX_URL, as `oemputx gate --flow-a`
 * and `compare --flow-cmd` pass them. Frame pointers are kept so that perf's call graphs
 * walk through it. */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static double iterations_per_us;
static volatile uint64_t sink;

static void on_term(int sig) { (void)sig; stop = 1; }

static uint64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t process_ns(void);

/* One line of --trace: the wall clock (ns since the epoch), messages answered so far and the
 * process's CPU (ns) then: its cost per message over any window, apart from oemputx. */
static void trace_line(FILE *f, uint64_t *traced, uint64_t messages) {
    *traced = wall_ns();
    fprintf(f, "%llu %llu %llu\n", (unsigned long long)*traced, (unsigned long long)messages,
            (unsigned long long)process_ns());
    fflush(f);
}

/* The whole process's CPU (every thread): its own cost per message, as a hold-out truth for
 * oemputx's accounting (the ladder's tests). */
static uint64_t process_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t thread_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Plain arithmetic, no system call: every sample in it is the function's own. */
static void spin(uint64_t n) {
    uint64_t x = sink;
    for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

__attribute__((noinline)) void parse_request(uint64_t n) { spin(n); __asm__ volatile(""); }
__attribute__((noinline)) void render_reply(uint64_t n) { spin(n); __asm__ volatile(""); }

static void calibrate(void) {
    uint64_t n = 1000000, t0 = thread_ns();
    spin(n);
    uint64_t t1 = thread_ns();
    iterations_per_us = (double)n / ((double)(t1 - t0) / 1000.0);
}

static uint64_t iterations(double us, double jitter) {
    double u = 2.0 * ((double)rand() / RAND_MAX) - 1.0;
    double x = us * (1.0 + jitter * u);
    return x <= 0 ? 0 : (uint64_t)(x * iterations_per_us);
}

/* The process's own counters beyond CPU at one instant. */
struct own {
    unsigned long long write_bytes, syscw, read_bytes, syscr, nvcsw, nivcsw, rss_kb, syncs;
};

static unsigned long long field(const char *text, const char *name) {
    const char *p = strstr(text, name);
    return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static void own_now(struct own *o, unsigned long long syncs) {
    char buf[4096];
    FILE *f = fopen("/proc/self/io", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    o->write_bytes = field(buf, "\nwrite_bytes: ");
    o->read_bytes = field(buf, "\nread_bytes: ");
    o->syscw = field(buf, "\nsyscw: ");
    o->syscr = field(buf, "\nsyscr: ");
    f = fopen("/proc/self/status", "r");
    n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    o->rss_kb = field(buf, "\nVmRSS:");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    o->nvcsw = (unsigned long long)ru.ru_nvcsw;
    o->nivcsw = (unsigned long long)ru.ru_nivcsw;
    o->syncs = syncs;
}

static void die(const char *what) {
    fprintf(stderr, "burn_responder: %s\n", what);
    exit(1);
}

static void check(amqp_rpc_reply_t r, const char *what) {
    if (r.reply_type != AMQP_RESPONSE_NORMAL) die(what);
}

int main(int argc, char **argv) {
    const char *queue = getenv("OEMPUTX_QUEUE"), *url = getenv("OEMPUTX_URL"), *truth = NULL;
    const char *trace_path = NULL;
    double a_us = 60, b_us = 20, jitter = 0.5, ns_per_byte = 0, fixed_speed = 0;
    int calibrations = 0;
    enum { SIZES = 8 };
    size_t size_of[SIZES];
    uint64_t size_msgs[SIZES] = {0}, size_ns[SIZES] = {0};
    int sizes = 0;
    long write_bytes = 0, leak_bytes = 0;
    const char *write_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--input-queue")) queue = argv[i + 1];
        else if (!strcmp(argv[i], "--url")) url = argv[i + 1];
        else if (!strcmp(argv[i], "--a-us")) a_us = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--b-us")) b_us = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--jitter")) jitter = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--ns-per-byte")) ns_per_byte = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--truth")) truth = argv[i + 1];
        else if (!strcmp(argv[i], "--trace")) trace_path = argv[i + 1];
        else if (!strcmp(argv[i], "--iterations-per-us")) fixed_speed = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--calibrate")) calibrations = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--write-bytes")) write_bytes = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--write-file")) write_path = argv[i + 1];
        else if (!strcmp(argv[i], "--leak-bytes")) leak_bytes = atol(argv[i + 1]);
        else die("unknown option; see the comment at the top of burn_responder.c");
    }
    if (calibrations > 0) {
        double best = 0;
        for (int k = 0; k < calibrations; k++) {
            calibrate();
            if (iterations_per_us > best) best = iterations_per_us;
        }
        printf("%.3f\n", best);
        return 0;
    }
    if (!queue) die("give --input-queue Q or OEMPUTX_QUEUE");
    struct amqp_connection_info ci;
    char *u = strdup(url ? url : "amqp://guest:guest@127.0.0.1:5672");
    amqp_default_connection_info(&ci);
    if (amqp_parse_url(u, &ci) != AMQP_STATUS_OK) die("--url is not an amqp:// URL");
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    srand((unsigned)getpid());
    if (fixed_speed > 0) iterations_per_us = fixed_speed;
    else calibrate();

    amqp_connection_state_t conn = amqp_new_connection();
    amqp_socket_t *sock = amqp_tcp_socket_new(conn);
    if (!sock || amqp_socket_open(sock, ci.host, ci.port)) die("cannot connect to the broker");
    check(amqp_login(conn, ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, ci.user, ci.password),
          "login refused");
    amqp_channel_open(conn, 1);
    check(amqp_get_rpc_reply(conn), "channel.open");
    amqp_queue_declare(conn, 1, amqp_cstring_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
    check(amqp_get_rpc_reply(conn), "queue.declare");
    amqp_basic_qos(conn, 1, 0, 10, 0);
    amqp_basic_consume(conn, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                       amqp_empty_table);
    check(amqp_get_rpc_reply(conn), "basic.consume");
    FILE *trace = NULL;
    if (trace_path && !(trace = fopen(trace_path, "w"))) die("cannot write --trace");
    printf("burn_responder: consuming %s\n", queue);
    fflush(stdout);
    uint64_t traced = 0;
    int out = -1;
    char *block = NULL;
    if (write_bytes > 0) {
        if (!write_path) write_path = "burn_responder.out";
        out = open(write_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (out < 0 || !(block = malloc((size_t)write_bytes))) die("cannot open --write-file");
        memset(block, 'x', (size_t)write_bytes);
    }
    unsigned long long syncs = 0;
    struct own first = {0}, last = {0};

    uint64_t messages = 0, a_ns = 0, b_ns = 0, p0 = 0, done_ns = thread_ns();
    while (!stop) {
        amqp_envelope_t env;
        struct timeval tick = {0, 100000};
        amqp_maybe_release_buffers(conn);
        amqp_rpc_reply_t r = amqp_consume_message(conn, &env, &tick, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT)
            continue;
        if (r.reply_type != AMQP_RESPONSE_NORMAL) break;
        if (messages == 0) {
            p0 = process_ns();
            own_now(&first, syncs);
        }
        uint64_t t0 = thread_ns();
        size_t len = env.message.body.len;
        parse_request(iterations(a_us + ns_per_byte * (double)len / 1000.0, jitter));
        uint64_t t1 = thread_ns();
        render_reply(iterations(b_us, jitter));
        uint64_t t2 = thread_ns();
        a_ns += t1 - t0;
        b_ns += t2 - t1;
        messages++;
        amqp_basic_properties_t *req = &env.message.properties;
        if (req->_flags & AMQP_BASIC_REPLY_TO_FLAG) {
            amqp_basic_properties_t p;
            p._flags = 0;
            if (req->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) {
                p._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
                p.correlation_id = req->correlation_id;
            } else if (req->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
                p._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
                p.correlation_id = req->message_id;
            }
            amqp_basic_publish(conn, 1, amqp_empty_bytes, req->reply_to, 0, 0, &p,
                               env.message.body);
        }
        if (out >= 0) {
            if (write(out, block, (size_t)write_bytes) != write_bytes) die("write failed");
            if (fsync(out)) die("fsync failed");
            syncs++;
        }
        if (leak_bytes > 0) {
            char *leak = malloc((size_t)leak_bytes);
            if (!leak) die("out of memory");
            for (long b = 0; b < leak_bytes; b += 4096) leak[b] = 1;
            leak[leak_bytes - 1] = 1;
        }
        amqp_basic_ack(conn, 1, env.delivery_tag, 0);
        amqp_destroy_envelope(&env);
        if (write_bytes > 0 || leak_bytes > 0) own_now(&last, syncs);
        uint64_t now_ns = thread_ns();
        int k = 0;
        while (k < sizes && size_of[k] != len) k++;
        if (k == sizes && sizes < SIZES) size_of[sizes++] = len;
        if (k < sizes) {
            size_msgs[k]++;
            size_ns[k] += now_ns - done_ns;
        }
        done_ns = now_ns;
        if (trace && wall_ns() - traced >= 20000000u) trace_line(trace, &traced, messages);
    }
    if (trace) {
        trace_line(trace, &traced, messages);
        fclose(trace);
    }
    if (truth) {
        FILE *f = fopen(truth, "w");
        if (!f) die("cannot write --truth");
        double n = messages ? (double)messages : 1.0;
        fprintf(f,
                "{\"messages\":%llu,\"parse_request_us\":%.3f,\"render_reply_us\":%.3f,"
                "\"process_us\":%.3f,\"by_size\":{",
                (unsigned long long)messages, a_ns / 1000.0 / n, b_ns / 1000.0 / n,
                messages ? (process_ns() - p0) / 1000.0 / n : 0.0);
        for (int k = 0; k < sizes; k++)
            fprintf(f, "%s\"%zu\":%.3f", k ? "," : "", size_of[k],
                    size_ns[k] / 1000.0 / (double)(size_msgs[k] ? size_msgs[k] : 1));
        fprintf(f, "}");
        if (write_bytes > 0 || leak_bytes > 0) {
            /* From the first message (read before it) to the last (read after it). */
            double m = messages ? (double)messages : 1.0;
#define PER(x) ((double)(last.x - first.x) / m)
            fprintf(f,
                    ",\"own\":{\"disk_write_bytes\":%.3f,\"write_calls\":%.4f,"
                    "\"disk_read_bytes\":%.3f,\"read_calls\":%.4f,\"syncs\":%.4f,"
                    "\"voluntary_switches\":%.4f,\"involuntary_switches\":%.4f,"
                    "\"rss_growth_bytes\":%.3f,\"leak_bytes\":%ld}",
                    PER(write_bytes), PER(syscw), PER(read_bytes), PER(syscr), PER(syncs),
                    PER(nvcsw), PER(nivcsw),
                    ((double)last.rss_kb - (double)first.rss_kb) * 1024.0 / m, leak_bytes);
#undef PER
        }
        fprintf(f, "}\n");
        fclose(f);
    }
    amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn);
    return 0;
}
