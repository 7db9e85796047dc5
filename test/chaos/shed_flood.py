#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""shed_flood.py: hostile connection floods against one of kcr's server ports,
with a legitimate client probing alongside (issue 28, finding 2).

  shed_flood.py --port P [--tls] [--holders N] [--holder-source ADDR]
                [--mode onebyte|hello|idle]
                [--seconds S] [--path /healthz] [--interval 0.1] [--timeout 1]

N holders each connect, send their opening and hold the connection; when the
server closes one it reconnects at once, so the server stays full and every
admission sheds someone. Modes:
  onebyte  one byte of an HTTP request ("G")
  hello    the first bytes of a TLS ClientHello record, then one more byte a
           second (a slow handshake)
  idle     nothing at all
Meanwhile one client sends a request every --interval seconds on a fresh
connection (over TLS with --tls, certificate not checked), as a kubelet probe
or a Prometheus scrape does, and counts it answered when an HTTP status line
arrives within --timeout seconds (kubelet's default probe timeout is 1 s).
Prints one line: answered/sent, the ratio, the worst latency, reconnects,
and the failures by kind: slow to connect (the TCP connect and the TLS
handshake did not finish in time: queued behind the flood), slow to answer
(connected, no status line in time), closed (shed or reset).
Exit 0 always: the caller decides what ratio it needs.
"""
import argparse
import asyncio
import multiprocessing
import ssl
import time

# A TLS 1.2 handshake record header and the start of a ClientHello.
HELLO_START = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])


async def holder(args, stats, stop):
    while not stop.is_set():
        try:
            r, w = await asyncio.open_connection(
                args.host, args.port,
                local_addr=(args.holder_source, 0) if args.holder_source else None)
        except OSError:
            stats["connect_errors"] += 1
            await asyncio.sleep(0.01)
            continue
        stats["connects"] += 1
        try:
            if args.mode == "onebyte":
                w.write(b"G")
            elif args.mode == "hello":
                w.write(HELLO_START[:3])
            await w.drain()
            sent = 3
            while not stop.is_set():
                try:
                    data = await asyncio.wait_for(r.read(4096), timeout=1.0)
                    if not data:
                        break  # closed by the server: reconnect
                except asyncio.TimeoutError:
                    if args.mode == "hello":
                        w.write(bytes([0x00]) if sent >= len(HELLO_START) else HELLO_START[sent:sent + 1])
                        sent += 1
                        await w.drain()
        except (OSError, ConnectionError):
            pass
        finally:
            w.close()


async def prober(args, stats, stop):
    ctx = None
    if args.tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    req = ("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % args.path).encode()
    while not stop.is_set():
        t0 = time.monotonic()
        stats["sent"] += 1
        ok = False
        w = None
        stage = ["connect"]
        try:
            async def once():
                nonlocal w
                r, w = await asyncio.open_connection(args.host, args.port, ssl=ctx)
                stage[0] = "reply"
                w.write(req)
                await w.drain()
                line = await r.readline()
                if not line:
                    stage[0] = "closed"
                return line.startswith(b"HTTP/1.")
            ok = await asyncio.wait_for(once(), timeout=args.timeout)
            if not ok:
                stats["fail_" + stage[0]] += 1
        except asyncio.TimeoutError:
            stats["fail_slow_" + stage[0]] += 1
        except (OSError, ConnectionError, ssl.SSLError):
            stats["fail_closed"] += 1
        finally:
            if w is not None:
                w.close()
        took = time.monotonic() - t0
        if ok:
            stats["answered"] += 1
            stats["worst"] = max(stats["worst"], took)
        await asyncio.sleep(max(0.0, args.interval - took))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--holders", type=int, default=100)
    ap.add_argument("--holder-source", default="",
                    help="the holders' source address (e.g. 127.0.0.2: a flood from another "
                         "address than the probe's); default: the same as the probe's")
    ap.add_argument("--mode", choices=["onebyte", "hello", "idle"], default="onebyte")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--timeout", type=float, default=1.0)
    return ap.parse_args()


async def run_holders(args, counts):
    stats = {"connects": 0, "connect_errors": 0}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(holder(args, stats, stop)) for _ in range(args.holders)]
    await asyncio.sleep(args.seconds + 1.5)
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    counts[0] = stats["connects"]
    counts[1] = stats["connect_errors"]


def holders_process(args, counts):
    asyncio.run(run_holders(args, counts))


async def run_prober(args, stats):
    stop = asyncio.Event()
    probe = asyncio.create_task(prober(args, stats, stop))
    await asyncio.sleep(args.seconds)
    stop.set()
    await probe


def main():
    # The holders run in a process of their own: a kubelet or a Prometheus is
    # not slowed by the flood's own client, and neither is the probe here.
    args = parse_args()
    counts = multiprocessing.Array("q", 2)
    hp = multiprocessing.Process(target=holders_process, args=(args, counts))
    hp.start()
    time.sleep(1.0)  # let the holders fill the server
    stats = {"sent": 0, "answered": 0, "worst": 0.0, "fail_slow_connect": 0,
             "fail_slow_reply": 0, "fail_closed": 0, "fail_reply": 0, "fail_connect": 0}
    asyncio.run(run_prober(args, stats))
    hp.join()
    ratio = stats["answered"] / stats["sent"] if stats["sent"] else 0.0
    print("shed_flood: port %d%s mode %s holders %d: %d/%d answered (%.1f%%), worst %.0f ms, "
          "%d holder connects, %d connect errors; failed: %d slow to connect (TCP and TLS), "
          "%d slow to answer, %d closed"
          % (args.port, " tls" if args.tls else "", args.mode, args.holders, stats["answered"],
             stats["sent"], 100 * ratio, 1000 * stats["worst"], counts[0], counts[1],
             stats["fail_slow_connect"], stats["fail_slow_reply"],
             stats["fail_closed"] + stats["fail_reply"] + stats["fail_connect"]))


if __name__ == "__main__":
    main()
