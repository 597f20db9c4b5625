# A hold-out AMQP 0-9-1 responder written with pika (not oemputx's client), for the A/B
# gate's calibration with a responder the gate was not built around: replies to each
# request's reply_to with the body and the request's correlation id (or its message id),
# burning --burn-us of CPU per message, and on SIGTERM prints its own CPU per message
# (getrusage, from the first request to the last reply).
#
#   python3 lab/holdout/amqp_responder.py --burn-us 700 [--input-queue Q] [--url U]
#
# The queue and URL come from --input-queue/--url, as `oemputx gate --flow-a` and
# `sweep --flow-cmd` pass them, or from OEMPUTX_QUEUE/OEMPUTX_URL.
import argparse, os, resource, signal, sys, time

import pika


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input-queue", default=os.environ.get("OEMPUTX_QUEUE"))
    p.add_argument("--url", default=os.environ.get("OEMPUTX_URL", "amqp://guest:guest@127.0.0.1:5672/%2f"))
    p.add_argument("--burn-us", type=float, default=0.0)
    a = p.parse_args()
    if not a.input_queue:
        sys.exit("amqp_responder: give --input-queue Q or OEMPUTX_QUEUE")
    conn = pika.BlockingConnection(pika.URLParameters(a.url))
    ch = conn.channel()
    ch.queue_declare(a.input_queue, durable=True)
    ch.basic_qos(prefetch_count=10)
    state = {"first": None, "last": None, "n": 0}

    def on_request(ch, method, props, body):
        if state["first"] is None:
            state["first"] = cpu()
        end = time.thread_time() + a.burn_us / 1e6
        while time.thread_time() < end:
            pass
        if props.reply_to:
            ch.basic_publish(
                "",
                props.reply_to,
                body,
                pika.BasicProperties(correlation_id=props.correlation_id or props.message_id),
            )
        ch.basic_ack(method.delivery_tag)
        state["n"] += 1
        state["last"] = cpu()

    ch.basic_consume(a.input_queue, on_request)
    signal.signal(signal.SIGTERM, lambda *_: ch.stop_consuming())
    try:
        ch.start_consuming()
    finally:
        used = (state["last"] or 0) - (state["first"] or 0)
        print(
            f"messages {state['n']} cpu_s {used:.6f} us_per_msg {1e6 * used / max(state['n'], 1):.2f}",
            file=sys.stderr,
            flush=True,
        )
        try:
            conn.close()
        except Exception:
            pass


main()
