"""A TCP relay that delays every chunk by a fixed time each way: a slow host for the bed.

This kernel has no ``netem`` qdisc (``tc qdisc add ... netem`` answers "Specified qdisc
kind is unknown"), so a host that answers slowly is made in user space: the host's sshd
listens on another port and this relay, run inside the host's namespace, listens on
port 22 and forwards both ways, holding each chunk ``delay_ms`` before passing it on
(order kept). Every SSH round trip to the host then takes ``2 x delay_ms`` longer.

    nsenter --net=/run/netns/NS python -m tests.testbed.delay ADDRESS PORT TARGET_PORT MS

Started and stopped by PID by :meth:`tests.testbed.bed.TestBed.slow_down`.
"""

from __future__ import annotations

import asyncio
import sys


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.ensure_future(send())
    try:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await sender
    except (ConnectionError, OSError):
        sender.cancel()
        writer.close()


async def main(address: str, port: int, target: int, delay_ms: float) -> None:
    delay = delay_ms / 1000.0

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            tr, tw = await asyncio.open_connection(address, target)
        except OSError:
            w.close()
            return
        await asyncio.gather(_pump(r, tw, delay), _pump(tr, w, delay), return_exceptions=True)

    server = await asyncio.start_server(handle, address, port)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    a, p, t, ms = sys.argv[1:5]
    asyncio.run(main(a, int(p), int(t), float(ms)))
