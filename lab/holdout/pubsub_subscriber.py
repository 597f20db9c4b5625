# A hold-out pub/sub subscriber written with nats-py (not oemputx's client): subscribes to
# the subjects TOPIC.S<first>..TOPIC.S<last> (the oemputx pubsub convention), counts the
# messages and distinct (publisher, seq) pairs it gets until SIGTERM, and prints them.
import asyncio, os, signal, sys

import nats


async def main():
    topic, first, last, width = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    nc = await nats.connect(os.environ.get("OEMPUTX_NATS", "nats://127.0.0.1:4222"))
    seen, count = set(), 0

    async def handler(msg):
        nonlocal count
        count += 1
        h = msg.headers or {}
        seen.add((h.get("publisher"), h.get("seq")))

    for s in range(first, last + 1):
        await nc.subscribe(f"{topic}.S{s:0{width}d}", cb=handler)
    await nc.flush()
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await nc.drain()
    print(f"received {count} distinct {len(seen)}", flush=True)


asyncio.run(main())
