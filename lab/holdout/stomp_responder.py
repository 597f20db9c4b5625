# A hold-out STOMP responder written with stomp.py (not oemputx's codec): replies by the
# JMS convention (to the request's reply-to, with its correlation-id) with the body,
# burning BURN_US of CPU per message, and prints its own CPU (getrusage) from the first
# request to the last reply.
import os, resource, signal, sys, threading, time, urllib.parse

import stomp

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

queue, burn_us = sys.argv[1], float(sys.argv[2])
url = urllib.parse.urlparse(os.environ.get("OEMPUTX_URL", "stomp://admin:admin@127.0.0.1:61613"))
conn = stomp.Connection12([(url.hostname, url.port or 61613)], heartbeats=(0, 0))
state = {"first": None, "last": None, "n": 0}
done = threading.Event()

class Listener(stomp.ConnectionListener):
    def on_message(self, frame):
        if state["first"] is None:
            state["first"] = cpu()
        end = time.thread_time() + burn_us / 1e6
        while time.thread_time() < end:
            pass
        h = frame.headers
        headers = {}
        if "correlation-id" in h:
            headers["correlation-id"] = h["correlation-id"]
        if "reply-to" in h:
            conn.send(destination=h["reply-to"], body=frame.body, headers=headers)
        conn.ack(h["ack"])
        state["n"] += 1
        state["last"] = cpu()

conn.set_listener("holdout", Listener())
conn.connect(url.username or "admin", url.password or "admin", wait=True)
conn.subscribe(destination=f"/queue/{queue}", id="holdout", ack="client-individual",
               headers={"activemq.prefetchSize": "64"})
print("ready", flush=True)
signal.signal(signal.SIGTERM, lambda *_: done.set())
done.wait()
conn.disconnect()
used = (state["last"] or 0) - (state["first"] or 0)
print(f"messages {state['n']} cpu_s {used:.6f} us_per_msg {1e6 * used / max(state['n'], 1):.2f}", flush=True)
