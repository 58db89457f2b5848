#!/usr/bin/env python3
"""Write the seed corpus of the tls_hello fuzz target (tests/fuzz/corpus/tls_hello/): real
ClientHellos from Python's ssl (OpenSSL) for TLS 1.3 and 1.2, with several SNI values
(none, exact, wildcard, unknown, IP literal, a rejecting server's name), re-recorded into
1-byte and 7-byte records, and with malformed server_name extensions. Byte 0 of each file
selects the listen address (0: rejecting default server, 1: normal default server).

Usage: python3 tests/fuzz/gen_tls_hello_seeds.py   (adds files named by their SHA-1)
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integ"))
import replay_hello  # noqa: E402  (a real ClientHello from Python's ssl)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "tls_hello")


def hello(sni, tls12):
    return replay_hello.client_hello_obj(sni, tls12, alpn=["http/1.1"])[3]


def rerecord(data, size):
    out, i = b"", 0
    while i < len(data):
        n = int.from_bytes(data[i + 3:i + 5], "big")
        payload = data[i + 5:i + 5 + n]
        for j in range(0, len(payload), size):
            c = payload[j:j + size]
            out += data[i:i + 3] + len(c).to_bytes(2, "big") + c
        i += 5 + n
    return out


def replace_name(h, old, new):
    assert len(old) == len(new) and h.count(old) == 1
    return h.replace(old, new)


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = []
    for tls12 in (False, True):
        for sni in (None, "a.test", "x.w.test", "b.test", "unknown.test", "r.test", "d.test"):
            h = hello(sni, tls12)
            seeds += [h, rerecord(h, 1), rerecord(h, 7)]
        h = hello("pppppppppp", tls12)
        for name in (b"127.0.0.1.", b"[::1]:443x", b"A.TEST....", b"a\x00bc.test\x00"):
            seeds.append(replace_name(h, b"pppppppppp", name))
    seeds.append(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")   # plain HTTP on a TLS port
    seeds.append(b"\x16\x03\x01\x00\x00")                      # empty record
    n = 0
    for s in seeds:
        for sel in (b"\x00", b"\x01"):
            data = sel + s
            p = os.path.join(OUT, hashlib.sha1(data).hexdigest())
            with open(p, "wb") as f:
                f.write(data)
            n += 1
    print("wrote %d seeds to %s" % (n, OUT))


if __name__ == "__main__":
    main()
