# A hold-out AMQP 1.0 responder written with Apache Qpid Proton (python-qpid-proton, not
# oemputx's client): consumes QUEUE, replies to each request's reply-to with the body and
# the request's message-id as correlation-id, burning BURN_US of CPU per message, and prints
# its own CPU (getrusage) from the first request to the last reply.
import os, resource, signal, sys, time

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Responder(MessagingHandler):
    def __init__(self, url, queue, burn_us):
        super().__init__(prefetch=64)
        self.url, self.queue, self.burn = url, queue, burn_us / 1e6
        self.senders = {}
        self.first = self.last = None
        self.n = 0

    def on_start(self, event):
        conn = event.container.connect(self.url)
        self.conn = conn
        event.container.create_receiver(conn, "/queue/" + self.queue)

    def on_link_opened(self, event):
        if event.receiver:
            print("ready", flush=True)

    def on_message(self, event):
        msg = event.message
        if self.first is None:
            self.first = cpu()
        end = time.thread_time() + self.burn
        while time.thread_time() < end:
            pass
        to = msg.reply_to
        if to:
            # RabbitMQ's plugin has no anonymous relay: one sender per reply address.
            sender = self.senders.get(to)
            if sender is None:
                sender = event.container.create_sender(self.conn, to)
                self.senders[to] = sender
            sender.send(Message(body=msg.body, correlation_id=msg.id))
        self.n += 1
        self.last = cpu()


def main():
    queue, burn_us = sys.argv[1], float(sys.argv[2])
    url = os.environ.get("OEMPUTX_AMQP10", "amqp://guest:guest@127.0.0.1:5672")
    responder = Responder(url, queue, burn_us)

    def report(*_):
        used = (responder.last or 0) - (responder.first or 0)
        print(f"messages {responder.n} cpu_s {used:.6f} us_per_msg {1e6 * used / max(responder.n, 1):.2f}", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, report)
    Container(responder).run()


main()
