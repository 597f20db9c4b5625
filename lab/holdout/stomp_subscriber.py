# A hold-out pub/sub subscriber written with stomp.py (not oemputx's codec): subscribes to
# /topic/TOPIC on ActiveMQ with the JMS selector symbol IN ('S<first>',...,'S<last>') (the
# oemputx pubsub convention for --select-by header), counts the messages and distinct
# (publisher, seq) pairs it gets until SIGTERM, and prints them.
import os, signal, sys, threading, urllib.parse

import stomp

topic, first, last, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
url = urllib.parse.urlparse(os.environ.get("OEMPUTX_URL", "stomp://admin:admin@127.0.0.1:61613"))
seen, state, lock = set(), {"count": 0}, threading.Lock()
subscribed, done = threading.Event(), threading.Event()


class Listener(stomp.ConnectionListener):
    def on_message(self, frame):
        with lock:
            state["count"] += 1
            seen.add((frame.headers.get("publisher"), frame.headers.get("seq")))

    def on_receipt(self, frame):
        if frame.headers.get("receipt-id") == "subscribed":
            subscribed.set()


conn = stomp.Connection12([(url.hostname, url.port or 61613)], heartbeats=(0, 0))
conn.set_listener("", Listener())
conn.connect(url.username or "admin", url.password or "admin", wait=True)
symbols = ",".join(f"'S{s:0{width}d}'" for s in range(first, last + 1))
conn.subscribe(f"/topic/{topic}", id="holdout", ack="auto",
               headers={"selector": f"symbol IN ({symbols})", "receipt": "subscribed"})
subscribed.wait(10)
print("ready", flush=True)
signal.signal(signal.SIGTERM, lambda *_: done.set())
done.wait()
conn.disconnect()
print(f"received {state['count']} distinct {len(seen)}", flush=True)
