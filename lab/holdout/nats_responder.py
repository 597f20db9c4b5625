# A hold-out NATS responder written with nats-py (not oemputx's client): replies to each
# request's reply subject with the body, burning BURN_US of CPU per message, and prints its
# own CPU (getrusage) from the first non-empty request to the last reply.
import asyncio, os, resource, signal, sys, time

import nats

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

async def main():
    subject, burn_us = sys.argv[1], float(sys.argv[2])
    nc = await nats.connect(os.environ.get("OEMPUTX_URL", "nats://127.0.0.1:4222"))
    state = {"first": None, "last": None, "n": 0}
    async def handler(msg):
        if msg.data and state["first"] is None:
            state["first"] = cpu()
        end = time.thread_time() + burn_us / 1e6
        while time.thread_time() < end:
            pass
        await nc.publish(msg.reply, msg.data)
        if msg.data:
            state["n"] += 1
            state["last"] = cpu()
    await nc.subscribe(subject, queue="holdout", cb=handler)
    await nc.flush()
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await nc.drain()
    used = (state["last"] or 0) - (state["first"] or 0)
    print(f"messages {state['n']} cpu_s {used:.6f} us_per_msg {1e6 * used / max(state['n'], 1):.2f}", flush=True)

asyncio.run(main())
