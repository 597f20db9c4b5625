# A hold-out Kafka responder written with confluent-kafka (librdkafka, not oemputx's client),
# following Spring Kafka's request/reply convention: each request's reply goes to the topic in
# its kafka_replyTopic header, on the partition in kafka_replyPartition (4-byte big-endian),
# with kafka_correlationId copied. Partitions are assigned (no consumer group join), read from
# their end. It burns BURN_US of CPU per message and prints its own CPU (getrusage) from the
# first request to the last reply.
#
#   OEMPUTX_KAFKA=127.0.0.1:19092 python kafka_responder.py TOPIC BURN_US
import os, resource, signal, struct, sys, time

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def main():
    topic, burn_us = sys.argv[1], float(sys.argv[2])
    servers = os.environ.get("OEMPUTX_KAFKA", "127.0.0.1:19092")
    # A short fetch wait: a broker that answers a waiting fetch only when it looks again
    # (tansu looks every half of it) would otherwise hold each request that long.
    consumer = Consumer({
        "bootstrap.servers": servers,
        "group.id": "oemputx-holdout",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": int(os.environ.get("FETCH_WAIT_MS", "10")),
        "fetch.min.bytes": 1,
    })
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 0, "acks": "all"})
    admin = AdminClient({"bootstrap.servers": servers})
    if topic not in admin.list_topics(timeout=10).topics:
        # As a flow declares its queue: the topic is made where missing, deleted on SIGTERM.
        for f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
            f.result(10)
        made = True
    else:
        made = False
    meta = consumer.list_topics(topic, timeout=10)
    parts = sorted(meta.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in parts])
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    state = {"first": None, "last": None, "n": 0}
    print("ready", flush=True)
    while not stop:
        msg = consumer.poll(0.05)
        if msg is None or msg.error():
            continue
        if state["first"] is None:
            state["first"] = cpu()
        end = time.thread_time() + burn_us / 1e6
        while time.thread_time() < end:
            pass
        headers = dict(msg.headers() or [])
        to = headers.get("kafka_replyTopic")
        if to is not None:
            partition = struct.unpack(">i", headers.get("kafka_replyPartition", b"\0\0\0\0"))[0]
            producer.produce(to.decode(), value=msg.value(), partition=partition,
                             headers=[("kafka_correlationId", headers.get("kafka_correlationId", b""))])
            producer.poll(0)
        state["n"] += 1
        state["last"] = cpu()
    producer.flush(5)
    consumer.close()
    if made:
        for f in admin.delete_topics([topic]).values():
            f.result(10)
    used = (state["last"] or 0) - (state["first"] or 0)
    print(f"messages {state['n']} cpu_s {used:.6f} us_per_msg {1e6 * used / max(state['n'], 1):.2f}", flush=True)

main()
