# The drain rate of lab/holdout/burn_responder.c, measured apart from oemputx (with pika):
# N requests queued on QUEUE before the responder starts, then the time from its first word
# until their N replies are on a queue of their own. Prints the rate (messages a second) and
# the responder's process id: it goes on serving QUEUE for the ladders (its calibration, and
# so its cost per message, is its own: another process would burn another amount). Its
# output goes to LOG.
#
#   python3 lab/ladder-drain.py URL QUEUE N RESPONDER_BIN US LOG
import subprocess, sys, time

import pika

url, queue, n, binary, us, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
replies = queue + ".drained"
conn = pika.BlockingConnection(pika.URLParameters(url))
ch = conn.channel()
ch.queue_declare(queue, durable=True)
ch.queue_declare(replies, durable=True)
for i in range(n):
    ch.basic_publish("", queue, b"<request/>",
                     pika.BasicProperties(reply_to=replies, correlation_id=f"drain-{i}"))
depth = lambda: ch.queue_declare(replies, durable=True, passive=True).method.message_count
out = open(log, "w")
p = subprocess.Popen([binary, "--input-queue", queue, "--url", url, "--a-us", us, "--b-us", "0",
                      "--jitter", "0"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
started = time.monotonic()
while "consuming" not in open(log).read():
    if p.poll() is not None or time.monotonic() - started > 20:
        sys.exit("the responder did not start: " + open(log).read())
    time.sleep(0.01)
t0, d0 = time.monotonic(), depth()
while depth() < n:
    if time.monotonic() - t0 > 300:
        sys.exit("the responder did not drain its queue in 5 minutes")
    time.sleep(0.01)
rate = (n - d0) / (time.monotonic() - t0)
ch.queue_delete(replies)
conn.close()
print(f"{rate:.1f} {p.pid}")
