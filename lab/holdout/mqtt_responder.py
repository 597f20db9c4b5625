# A hold-out MQTT 5 responder written with paho-mqtt (not oemputx's client): replies to each
# request's Response Topic with its Correlation Data and the body, burning BURN_US of CPU
# per message, and prints its own CPU (getrusage) from the first request to the last reply.
import os, resource, signal, sys, threading, time, urllib.parse

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.packettypes import PacketTypes

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

topic, burn_us = sys.argv[1], float(sys.argv[2])
url = urllib.parse.urlparse(os.environ.get("OEMPUTX_URL", "mqtt://127.0.0.1:1883"))
state = {"first": None, "last": None, "n": 0}
ready, done = threading.Event(), threading.Event()

def on_connect(client, userdata, flags, reason, properties):
    client.subscribe(f"$share/holdout/{topic}", qos=1)

def on_subscribe(client, userdata, mid, reasons, properties):
    ready.set()

def on_message(client, userdata, msg):
    if state["first"] is None:
        state["first"] = cpu()
    end = time.thread_time() + burn_us / 1e6
    while time.thread_time() < end:
        pass
    p = msg.properties
    to = getattr(p, "ResponseTopic", None)
    if to:
        props = Properties(PacketTypes.PUBLISH)
        if getattr(p, "CorrelationData", None) is not None:
            props.CorrelationData = p.CorrelationData
        client.publish(to, msg.payload, qos=msg.qos, properties=props)
    state["n"] += 1
    state["last"] = cpu()

client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"holdout-{os.getpid()}",
                     protocol=mqtt.MQTTv5)
client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
client.connect(url.hostname, url.port or 1883)
client.loop_start()
ready.wait(10)
print("ready", flush=True)
signal.signal(signal.SIGTERM, lambda *_: done.set())
done.wait()
client.loop_stop()
client.disconnect()
used = (state["last"] or 0) - (state["first"] or 0)
print(f"messages {state['n']} cpu_s {used:.6f} us_per_msg {1e6 * used / max(state['n'], 1):.2f}", flush=True)
