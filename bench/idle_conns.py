#!/usr/bin/env python3
"""Hold N idle keep-alive TLS connections open against a server, after one request each.

Usage: idle_conns.py HOST PORT N PATH [PARALLEL]
Opens N connections (at most PARALLEL handshakes at a time), sends one HTTP/1.1 keep-alive
GET PATH on each and reads its whole response (Content-Length framing), then prints
"ready N" on stdout and keeps every connection open until stdin closes or a line arrives.
Exit status 1 when a connection fails (the error is printed on stderr). Used by
bench/bulk.sh to measure a server worker's memory per idle connection.
"""
import asyncio
import ssl
import sys


async def one(host, port, path, ctx, sem, held):
    async with sem:
        r, w = await asyncio.open_connection(host, port, ssl=ctx, server_hostname="localhost")
        w.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        await w.drain()
        head = await r.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError("unexpected answer: " + head[:40].decode(errors="replace"))
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":", 1)[1])
        if n:
            await r.readexactly(n)
        held.append((r, w))


async def main():
    host, port, n, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    par = int(sys.argv[5]) if len(sys.argv) > 5 else 64
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    sem = asyncio.Semaphore(par)
    held = []
    await asyncio.gather(*(one(host, port, path, ctx, sem, held) for _ in range(n)))
    print(f"ready {len(held)}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    for _, w in held:
        w.close()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as e:  # noqa: BLE001 - report any failure and exit 1
        print(f"idle_conns.py: {e!r}", file=sys.stderr)
        sys.exit(1)
