#!/usr/bin/env python3
"""The four protocol fixes of issue #23, each found by a real client or testssl.sh.

- TLS 1.3 resumption renews the ticket: a client uses a TLS 1.3 ticket once (RFC 8446
  Appendix C.4), so five chained resumptions, each offering the ticket the previous
  connection received and never a used one, must all resume (automatic keys, key files,
  and stateful tickets of the shared cache); TLS 1.2 keeps its ticket;
- SNI acknowledged (RFC 6066 §3): an empty server_name extension in the ServerHello (TLS
  1.2) or EncryptedExtensions (TLS 1.3) when the name chose the server block; none for
  an unknown name or without SNI;
- a failed handshake with client bytes still unread ends with the alert and then FIN
  (lingering close), never a reset: the client reads the alert;
- fleet ticket keys from Redis: right after a start or a reload, no ticket is issued that
  the other gateway of the fleet cannot decrypt.
"""
import os
import re
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import replay_hello  # noqa: E402
from test_resume import client_ctx, connect  # noqa: E402
from test_resume_redis import with_redis, two_gateways  # noqa: E402


def one_server(env, extra="", workers=1):
    env.write("html/index.html", "hello\n")
    port = env.port()
    conf = env.conf("""
    %s
    server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; }
    server { listen 127.0.0.1:%d ssl; server_name b.test; %s root %s; }
    """ % (extra, port, env.tls("a_rsa"), env.html, port, env.tls("b_rsa"), env.html),
        main="worker_processes %d;" % workers)
    s = env.start(conf, port=port)
    return s, port


def chain(port, version, n=5):
    """n + 1 connections, each offering the session of the one before: the list of
    session_reused, after asserting that no ticket (session) was offered twice."""
    ctx = client_ctx(version)
    seen = set()
    reused_list = []
    _, sess = connect(ctx, port)
    for _ in range(n):
        assert sess.id not in seen, "the client would offer a used ticket again"
        seen.add(sess.id)
        reused, new = connect(ctx, port, session=sess)
        reused_list.append(reused)
        if version == "1.3":
            # OpenSSL's client names a TLS 1.3 session by its ticket's hash: a new id is
            # a new ticket; the same one means no NewSessionTicket came
            assert new.id != sess.id, "TLS 1.3 resumption %d issued no new ticket" % (
                len(reused_list))
        sess = new
    return reused_list


def test_tls13_resumption_renews_ticket(env):
    s, port = one_server(env)
    r = chain(port, "1.3")
    assert r == [True] * 5, "five chained single-use TLS 1.3 resumptions: %s" % r
    # TLS 1.2 may reuse its ticket (RFC 5077): still resumed each time
    ctx = client_ctx("1.2")
    _, sess = connect(ctx, port)
    for _ in range(3):
        reused, sess2 = connect(ctx, port, session=sess)
        assert reused
        sess = sess2


def test_tls13_renews_with_key_file_and_stateful(env):
    k = env.write("t.key", os.urandom(80))
    s, port = one_server(env, "ssl_session_ticket_key %s;" % k)
    assert chain(port, "1.3") == [True] * 5
    s.stop()
    s, port = one_server(env, "ssl_session_tickets off; ssl_session_cache shared:Z:1m;")
    assert chain(port, "1.3") == [True] * 5, "stateful TLS 1.3 tickets"


def test_tls13_renewal_s_client(env):
    """The issue's reproduction: openssl s_client -sess_in prints Reused and receives a
    NewSessionTicket."""
    s, port = one_server(env)
    sess = env.path("s.pem")
    base = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername",
            "a.test", "-tls1_3", "-ign_eof", "-msg"]
    req = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
    p = H.run(base + ["-sess_out", sess], input=req, timeout=20)
    assert "New, TLSv1.3" in p.stdout, p.stdout[-800:]
    for i in range(3):
        p = H.run(base + ["-sess_in", sess, "-sess_out", sess], input=req, timeout=20)
        assert "Reused, TLSv1.3" in p.stdout, "resumption %d: %s" % (i, p.stdout[-800:])
        assert "NewSessionTicket" in p.stdout, "resumption %d issued no ticket" % i


def s_client_ext(port, args):
    p = H.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-tlsextdebug"]
              + args, input="", timeout=20)
    out = p.stdout + p.stderr
    assert re.search(r"^New, TLSv1\.[23]", out, re.M), out[-800:]
    return re.search(r'TLS server extension "server name" \(id=0\), len=0', out) is not None


def test_sni_acknowledged(env):
    s, port = one_server(env)
    for proto in ("-tls1_2", "-tls1_3"):
        assert s_client_ext(port, [proto, "-servername", "a.test"]), \
            "%s: no empty server_name extension for a name that chose a.test" % proto
        assert s_client_ext(port, [proto, "-servername", "b.test"]), "%s: b.test" % proto
        assert not s_client_ext(port, [proto, "-servername", "unknown.test"]), \
            "%s: a name that chose nothing was acknowledged" % proto
        assert not s_client_ext(port, [proto, "-noservername"]), "%s: no SNI" % proto


def client_hello(ciphers):
    """The bytes of a TLS 1.2 ClientHello offering only `ciphers` (from Python's ssl)."""
    return replay_hello.client_hello_obj("a.test", tls12=True, ciphers=ciphers)[3]


def test_failed_handshake_alert_then_fin(env):
    """A ClientHello with no shared cipher followed by more bytes: the client reads the
    handshake_failure alert, then EOF (FIN), not a reset: with 100 bytes (the issue's
    case), with 64 KiB (more than OpenSSL's read-ahead takes, so bytes are left in the
    socket when the handshake fails) and with bytes sent after the alert came."""
    s, port = one_server(env, "ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;")
    hello = client_hello("ECDHE-ECDSA-AES256-SHA")  # the server has no ECDSA cert
    for delay, extra in ((0, 100), (0, 65536), (0.2, 100)):
        for _ in range(3):
            sk = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                if delay:
                    sk.sendall(hello)
                    time.sleep(delay)
                    sk.sendall(b"x" * extra)
                else:
                    sk.sendall(hello + b"x" * extra)
                time.sleep(0.2)  # let a reset, if any, arrive before we read
                data = b""
                while True:
                    try:
                        d = sk.recv(4096)
                    except ConnectionResetError:
                        raise AssertionError("connection reset after %r (delay %s)" %
                                             (data, delay))
                    if not d:
                        break
                    data += d
                # an alert record: type 21, TLS 1.2, length 2, fatal(2) handshake_failure(40)
                assert data[:1] == b"\x15" and data[5:7] == b"\x02\x28", data
            finally:
                sk.close()


@with_redis
def test_redis_fleet_keys_no_local_ticket(env, redis):
    """Right after the start (and after a reload), a gateway issues no ticket under a
    local key: every TLS 1.3 ticket gateway 1 gives resumes on gateway 2."""
    srvs, ports = two_gateways(env, redis, "ssl_session_ticket_key redis://127.0.0.1:%d;"
                               % redis.port)
    ctx = client_ctx("1.3")

    def round_(tries):
        issued = 0
        for _ in range(tries):
            _, sess = connect(ctx, ports[0][0])
            if sess is None or not sess.has_ticket:
                continue
            issued += 1
            reused, _ = connect(ctx, ports[1][0], session=sess)
            assert reused, "a ticket issued right after the start was not resumed by the " \
                "other gateway (made under a local key)"
        return issued

    round_(6)
    # once the fleet's key is known, tickets are issued (and resume across)
    H.wait_until(lambda: round_(1) == 1, 10, what="tickets under the fleet key")
    srvs[0].send(signal.SIGHUP)
    time.sleep(0.3)
    round_(6)


if __name__ == "__main__":
    H.main(globals())
