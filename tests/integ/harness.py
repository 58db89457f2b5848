"""
Integration-test harness for tlsgate (standard library only).

Each test file is a script: `python3 tests/integ/test_x.py BIN [TEST...]`. It defines
plain functions `test_*(env)` and ends with `harness.main(globals())`. For every test the
runner makes a fresh temporary directory (an Env), runs the function, then kills every
server the test started, checks that their error logs hold no [crit]/[alert]/[emerg]
line (unless the test allows them) and removes the directory. On failure the error logs
are printed. Exit status: 0 when every test passed (or is a listed known failure or was
skipped), 1 otherwise.

Known failures: a test file may define KNOWN_FAILURES = {"test_name": "why", or
"test_name:check": "why"} for checks that fail because the SERVER is wrong; a failure of a
listed test (or of a `with env.known("check"):` block) is reported as XFAIL and does not
fail the run; a listed check that passes is reported as XPASS (remove the entry).

Certificates (RSA-2048 and ECDSA P-256 for a.test, RSA-2048 for b.test) are generated
with the openssl CLI once per run of a test file, into that run's temporary directory.
"""
import contextlib
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

FILE_TIMEOUT = 110  # seconds: a whole test file never runs longer (CTest TIMEOUT is 120)
BAD_LOG = re.compile(r"\[(crit|alert|emerg)\]")
# Run as root (CI), tlsgate refuses a configuration without `user`: the tests keep root
# workers deliberately (their files live in 0700 temporary directories).
USER_LINE = "user root;\n" if os.geteuid() == 0 else ""


class SkipTest(Exception):
    pass


class KnownFailure(Exception):
    pass


def skip(why):
    raise SkipTest(why)


def binary():
    return _state["bin"]


_state = {"bin": None, "certs": None, "certdir": None, "test": None, "known": {},
          "xfail": [], "xpass": [], "shared_dirs": []}


def shared_dir(prefix):
    """A new temporary directory for what a test file's tests share (a PKI), removed when
    main() ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    _state["shared_dirs"].append(d)
    return d


# ---------------------------------------------------------------- processes


def run(args, timeout=30, input=None, env=None, cwd=None, check=False):
    """subprocess.run with a timeout, text output; returns CompletedProcess."""
    p = subprocess.run(args, input=input, capture_output=True, timeout=timeout, env=env,
                       cwd=cwd, text=isinstance(input, str) or input is None,
                       errors="replace" if (isinstance(input, str) or input is None) else None)
    if check and p.returncode != 0:
        raise AssertionError("command failed (exit %d): %s\nstdout:\n%s\nstderr:\n%s" %
                             (p.returncode, " ".join(map(str, args)), p.stdout, p.stderr))
    return p


def reap(*procs, timeout=5):
    """Kill each subprocess.Popen of procs that still runs and wait up to timeout seconds
    for it: the `finally:` of a test that runs a client (wrk, s_client) beside the server,
    so no process outlives the test. Raises subprocess.TimeoutExpired if one does not exit."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=timeout)


_ports_given = set()


def free_port():
    """A free TCP port on 127.0.0.1 (bind to port 0, close, use), never one this process
    was given before: the kernel may hand a closed probe's port out again, and two
    listeners of one configuration then collide (integ_resume_redis got its TLS and
    status listeners on one port)."""
    for _ in range(100):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _ports_given:
            _ports_given.add(port)
            return port
    raise RuntimeError("no fresh free port after 100 tries")


def port_accepts(port, host="127.0.0.1", timeout=0.5):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_until(pred, timeout, interval=0.05, what="condition"):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= end:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def _live_procs():
    """(pid, ppid, pgid) of every live process (from /proc/PID/stat), zombies excluded."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        # after "(comm) ": state, ppid, pgrp
        rest = st[st.rfind(")") + 2:].split()
        if rest[0] != "Z":
            yield int(d), int(rest[1]), int(rest[2])


def children(pid):
    """Pids of the live children of pid (from /proc), zombies excluded."""
    return sorted(p for p, ppid, _ in _live_procs() if ppid == pid)


def children_in_group(pgid):
    """Live processes of process group pgid (the server's session)."""
    return [p for p, _, g in _live_procs() if g == pgid]


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except OSError:
        return False
    return st[st.rfind(")") + 2:].split()[0] != "Z"


# ---------------------------------------------------------------- certificates


def _gen_certs(d):
    specs = {
        "a_rsa": (["-newkey", "rsa:2048"], "a.test"),
        "a_ec": (["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"], "a.test"),
        "b_rsa": (["-newkey", "rsa:2048"], "b.test"),
    }
    certs = {}
    for name, (keyargs, cn) in specs.items():
        crt, key = os.path.join(d, name + ".crt"), os.path.join(d, name + ".key")
        run(["openssl", "req", "-x509", *keyargs, "-nodes", "-sha256", "-days", "2",
             "-keyout", key, "-out", crt, "-subj", "/CN=" + cn,
             "-addext", "subjectAltName=DNS:" + cn], timeout=60, check=True)
        certs[name] = (crt, key)
    return certs


def certs():
    if _state["certs"] is None:
        _state["certdir"] = tempfile.mkdtemp(prefix="tlsgate-integ-certs-")
        _state["certs"] = _gen_certs(_state["certdir"])
    return _state["certs"]


# ---------------------------------------------------------------- server


class Server:
    def __init__(self, env, conf, args, extra_env, cwd, log, pidfile, preexec=None):
        self.env = env
        self.conf = conf
        self.log = log
        self.pidfile = pidfile
        e = dict(os.environ)
        e["TLSGATE_STATE_DIR"] = env.state
        e.update(extra_env or {})
        self.environ = e
        self.out = open(os.path.join(env.dir, "server-%d.out" % len(env.servers)), "wb+")
        cmd = [binary()] + (["-c", conf] if conf else []) + list(args)
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=subprocess.STDOUT, env=e, cwd=cwd or env.dir,
                                     start_new_session=True, preexec_fn=preexec)
        self.pid = self.proc.pid
        env.servers.append(self)

    def output(self):
        self.out.flush()
        self.out.seek(0)
        return self.out.read().decode("utf-8", "replace")

    def log_text(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except (OSError, TypeError):
            return ""

    def wait_port(self, port, timeout=10):
        def ok():
            if self.proc.poll() is not None:
                raise AssertionError("tlsgate exited with %s before accepting on port %d\n"
                                     "output:\n%s" % (self.proc.returncode, port, self.output()))
            return port_accepts(port)
        wait_until(ok, timeout, what="tlsgate to accept on 127.0.0.1:%d" % port)
        return self

    def workers(self):
        return children(self.pid)

    def wait_workers(self, n, timeout=10):
        return wait_until(lambda: len(self.workers()) == n and self.workers(), timeout,
                          what="%d worker process(es) of master %d" % (n, self.pid))

    def send(self, sig):
        os.kill(self.pid, sig)

    def stop(self, sig=signal.SIGQUIT, timeout=10):
        """Send sig and assert that the master exits within timeout; returns its status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("tlsgate (pid %d) did not exit within %ss after %s" %
                                 (self.pid, timeout, signal.Signals(sig).name))
        return rc

    def kill(self):
        """Last resort (finally blocks): kill the master's whole process group."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class Env:
    """One test's temporary world: directory, state dir, certificates, servers."""

    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="tlsgate-integ-%s-" % name)
        self.state = os.path.join(self.dir, "state")
        os.mkdir(self.state)
        self.html = os.path.join(self.dir, "html")
        os.mkdir(self.html)
        self.log = os.path.join(self.dir, "error.log")
        self.pidfile = os.path.join(self.dir, "tlsgate.pid")
        self.certs = certs()
        self.servers = []
        self.allow_log = False  # True: [crit]/[alert]/[emerg] lines are expected
        self.xfails = []

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def write(self, rel, data, mode=None):
        p = rel if os.path.isabs(rel) else os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(p, mode)
        return p

    def port(self):
        return free_port()

    def main_conf(self, main=""):
        return ("%serror_log %s info;\npid %s;\n%s\nevents { worker_connections 512; }\n" %
                (USER_LINE, self.log, self.pidfile, main))

    def tls(self, *names):
        """ssl_certificate/_key lines for the given cert names (a_rsa, a_ec, b_rsa)."""
        out = []
        for n in names:
            crt, key = self.certs[n]
            out.append("ssl_certificate %s; ssl_certificate_key %s;" % (crt, key))
        return " ".join(out)

    def conf(self, http, main="", name="tlsgate.conf"):
        """Write main-context lines (error_log, pid, events) + `http { http }`; return path."""
        return self.write(name, self.main_conf(main) + "http {\n%s\n}\n" % http)

    def server(self, port, *lines, name="a.test", certs=("a_rsa",), root=True, listen="ssl"):
        """A `server { }` block for http { }: listen 127.0.0.1:port ssl (or the parameters
        in listen), server_name name, the certificates (env.tls(*certs)), `root env.html`
        (root=PATH: that one, False: none), then lines (empty ones left out)."""
        body = ["listen 127.0.0.1:%d %s;" % (port, listen), "server_name %s;" % name, self.tls(*certs)]
        if root:
            body.append("root %s;" % (self.html if root is True else root))
        body += [ln for ln in lines if ln]
        return "\n    server {\n        %s\n    }" % "\n        ".join(body)

    def simple_conf(self, port, locations="", server_extra="", http_extra="", main="",
                    certs=("a_rsa",), name="tlsgate.conf"):
        """One server a.test on 127.0.0.1:port with root env.html."""
        return self.conf("\n    %s%s" % (http_extra, self.server(port, server_extra, locations,
                                                                 certs=certs)),
                         main=main, name=name)

    def start(self, conf, args=(), env=None, cwd=None, port=None, log=None, pidfile=None,
              preexec=None):
        """Start tlsgate; preexec runs in the child before exec (e.g. setrlimit)."""
        s = Server(self, conf, args, env, cwd, log or self.log, pidfile or self.pidfile,
                   preexec)
        if port:
            s.wait_port(port)
        return s

    @contextlib.contextmanager
    def known(self, check):
        """A check that may fail because of a listed server bug (KNOWN_FAILURES)."""
        key = "%s:%s" % (self.name, check)
        try:
            yield
        except AssertionError as e:
            if key in _state["known"]:
                msg = "XFAIL %s (%s): %s" % (key, _state["known"][key], first_line(e))
                print(msg, flush=True)
                self.xfails.append(key)
                return
            raise
        if key in _state["known"]:
            print("XPASS %s: passes now, remove it from KNOWN_FAILURES" % key, flush=True)

    # -------------------------------------------------------------- clients

    def curl(self, *args, timeout=20):
        return run(["curl", "-sS", "-k", "--max-time", str(timeout - 5), *args],
                   timeout=timeout)

    def get(self, url, *args, host="a.test", timeout=20):
        """curl one URL (resolving host to 127.0.0.1): (status, headers, body bytes).

        url is a path ("/x") or a full URL; headers is a dict of lower-cased names of the
        last response (values of repeated fields joined with ", ")."""
        if url.startswith("/"):
            raise ValueError("give a full URL")
        hfile = os.path.join(self.dir, "curl.h")
        bfile = os.path.join(self.dir, "curl.b")
        for f in (hfile, bfile):
            if os.path.exists(f):
                os.unlink(f)
        m = re.match(r"https?://([^/:]+):(\d+)", url)
        res = ["--resolve", "%s:%s:127.0.0.1" % (m.group(1), m.group(2))] if m else []
        p = run(["curl", "-sS", "-k", "--max-time", str(timeout - 5), *res, "-D", hfile,
                 "-o", bfile, *args, url], timeout=timeout)
        if p.returncode != 0:
            raise AssertionError("curl %s failed (exit %d): %s" % (url, p.returncode,
                                                                    p.stderr.strip()))
        with open(hfile, "rb") as f:
            raw = f.read().decode("latin-1")
        body = b""
        if os.path.exists(bfile):
            with open(bfile, "rb") as f:
                body = f.read()
        status, headers = parse_head(raw.split("\r\n\r\n")[-2] if raw.count("\r\n\r\n") > 1
                                     else raw)
        return status, headers, body

    def tls_socket(self, port, sni="a.test", alpn=None, timeout=5):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if alpn:
            ctx.set_alpn_protocols(alpn)
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        try:
            s = ctx.wrap_socket(raw, server_hostname=sni)
        except Exception:
            raw.close()
            raise
        s.settimeout(timeout)
        return s


def parse_head(raw):
    """'HTTP/1.1 200 OK\\r\\nA: b\\r\\n...' -> (200, {'a': 'b'})"""
    lines = raw.strip("\r\n").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for ln in lines[1:]:
        if ":" not in ln:
            continue
        k, v = ln.split(":", 1)
        k = k.strip().lower()
        headers[k] = headers[k] + ", " + v.strip() if k in headers else v.strip()
    return status, headers


def first_line(e):
    s = str(e).strip()
    return s.split("\n")[0] if s else type(e).__name__


# ---------------------------------------------------------------- raw HTTP over TLS


def recv_all(sock, timeout=5, limit=1 << 22, until=None):
    """Read until EOF (returns data, True) or until timeout, `limit` bytes or until(data)
    is true (data, False)."""
    data = b""
    end = time.monotonic() + timeout
    while len(data) < limit and not (until and until(data)):
        left = end - time.monotonic()
        if left <= 0:
            return data, False
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return data, False
        except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            return data, True
        except ssl.SSLError as e:
            if "EOF" in str(e) or "ZERO_RETURN" in str(e):
                return data, True
            raise
        if not chunk:
            return data, True
        data += chunk
    return data, False


def recv_until(sock, want, timeout=5):
    """Read until `want` has arrived: at least that many bytes (an int) or data that ends
    with it (bytes); or until EOF or timeout. Returns the data read; the socket keeps its
    timeout."""
    before = sock.gettimeout()
    try:
        if isinstance(want, int):
            return recv_all(sock, timeout, until=lambda d: len(d) >= want)[0]
        return recv_all(sock, timeout, until=lambda d: d.endswith(want))[0]
    finally:
        sock.settimeout(before)


class Response:
    def __init__(self, status, headers, body, raw_head):
        self.status, self.headers, self.body, self.raw_head = status, headers, body, raw_head

    def __repr__(self):
        return "<%d %r %r>" % (self.status, self.headers, self.body[:80])


def read_response(sock, buf=b"", timeout=5, head_request=False):
    """Read one HTTP/1.1 response (Content-Length framed). Returns (Response, leftover)."""
    end = time.monotonic() + timeout

    def more():
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out reading a response; got so far: %r" % buf[:300])
        sock.settimeout(left)
        try:
            c = sock.recv(65536)
        except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            c = b""
        if not c:
            raise EOFError("connection closed; got so far: %r" % buf[:300])
        return c

    while b"\r\n\r\n" not in buf:
        buf += more()
    head, buf = buf.split(b"\r\n\r\n", 1)
    status, headers = parse_head(head.decode("latin-1"))
    n = 0 if head_request or status in (204, 304) or 100 <= status < 200 else \
        int(headers.get("content-length", "0"))
    while len(buf) < n:
        buf += more()
    return Response(status, headers, buf[:n], head.decode("latin-1")), buf[n:]


def request(path, method="GET", host="a.test", extra="", body=b""):
    """The bytes of an HTTP/1.1 request: extra = more header lines, each ending in CRLF."""
    return ("%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (method, path, host, extra)).encode() + body


@contextlib.contextmanager
def answered(env, port, raw, sni="a.test", timeout=5):
    """Send raw on a new TLS connection to port (env.tls_socket) and read the first
    response: yields (the socket, the Response, the bytes read after it); the socket closes
    on leaving. Read errors as read_response's."""
    with env.tls_socket(port, sni=sni, timeout=timeout) as s:
        s.sendall(raw)
        r, rest = read_response(s, timeout=timeout)
        yield s, r, rest


def exchange(env, port, raw, timeout=10):
    """Send raw on a new TLS connection to port (SNI a.test); the first Response."""
    with answered(env, port, raw, timeout=timeout) as (_, r, _):
        return r


def closed_by_peer(sock, timeout=3):
    """True when the peer closes the connection (EOF/reset) within timeout, with no data."""
    data, eof = recv_all(sock, timeout)
    if data:
        raise AssertionError("expected the connection to close, got data: %r" % data[:200])
    return eof


class RecordTLS:
    """A TLS client over a MemoryBIO that sees the server's raw TLS records: with TLS 1.2
    (no post-handshake messages) each application_data record is one SSL_write of the
    server, so `records` tells how many writes a response took."""

    def __init__(self, port, sni="a.test", timeout=5, tls12=True):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if tls12:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_hostname=sni)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.timeout = timeout
        self.raw = b""       # raw bytes not yet split into records
        self.records = []    # (content type, length) of every record received
        self.eof = False
        end = time.monotonic() + timeout
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                if time.monotonic() > end or not self._recv():
                    raise AssertionError("TLS handshake did not complete")
        self._flush()
        self.records = []

    def _flush(self):
        data = self.out.read()
        if data:
            self.sock.sendall(data)

    def _recv(self):
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return False
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            self.inc.write_eof()
            return False
        self.raw += data
        while len(self.raw) >= 5:
            n = int.from_bytes(self.raw[3:5], "big")
            if len(self.raw) < 5 + n:
                break
            self.records.append((self.raw[0], n))
            self.raw = self.raw[5 + n:]
        self.inc.write(data)
        return True

    def send(self, data):
        self.obj.write(data)
        self._flush()

    def read_until(self, pred, timeout=None):
        """Read plaintext until pred(data) is true, EOF or timeout; returns the data."""
        data = b""
        end = time.monotonic() + (timeout or self.timeout)
        while not pred(data):
            try:
                while True:
                    data += self.obj.read(65536)
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if pred(data):
                break
            left = end - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            if not self._recv() and self.eof:
                try:
                    data += self.obj.read(65536)
                except ssl.SSLError:
                    pass
                break
        return data

    def close(self):
        self.sock.close()


# ---------------------------------------------------------------- runner


def check_logs(env):
    """Assert that no server log of env has a [crit]/[alert]/[emerg] line."""
    if env.allow_log:
        return
    seen = set()
    for s in env.servers:
        if s.log in seen or not s.log:
            continue
        seen.add(s.log)
        bad = [ln for ln in s.log_text().splitlines() if BAD_LOG.search(ln)]
        if bad:
            raise AssertionError("error log %s has unexpected lines:\n  %s" %
                                 (s.log, "\n  ".join(bad)))


def dump_logs(env):
    seen = set()
    for s in env.servers:
        if s.log and s.log not in seen:
            seen.add(s.log)
            txt = s.log_text()
            print("---- error log %s (last 60 lines) ----" % s.log)
            print("\n".join(txt.splitlines()[-60:]) or "(empty)")
        out = s.output()
        if out.strip() and s.log != s.out.name:
            print("---- stdout/stderr of %s ----" % " ".join(s.cmd))
            print("\n".join(out.splitlines()[-30:]))
    print("---- end ----", flush=True)


def _alarm(signum, frame):
    raise TimeoutError("test file ran longer than %ds" % FILE_TIMEOUT)


def main(ns):
    """Run the test_* functions of module namespace ns (in definition order)."""
    argv = sys.argv[1:]
    b = argv[0] if argv else os.environ.get("TLSGATE_BIN") or os.path.join(SRC, "build",
                                                                           "tlsgate")
    b = os.path.abspath(b)
    if not os.access(b, os.X_OK):
        print("FAIL: tlsgate binary %r is not executable (pass it as argv[1] or TLSGATE_BIN)"
              % b)
        return sys.exit(2)
    _state["bin"] = b
    _state["known"] = dict(ns.get("KNOWN_FAILURES", {}))
    wanted = set(argv[1:])
    tests = [(k, v) for k, v in ns.items() if k.startswith("test_") and callable(v)]
    if wanted:
        unknown = wanted - {k for k, _ in tests}
        if unknown:
            print("FAIL: no such test(s): %s" % ", ".join(sorted(unknown)))
            return sys.exit(2)
        tests = [(k, v) for k, v in tests if k in wanted]
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(FILE_TIMEOUT)
    failed, t0 = [], time.monotonic()
    try:
        for name, fn in tests:
            t1 = time.monotonic()
            env, keep = None, False
            try:
                env = Env(name)
                try:
                    fn(env)
                    for s in env.servers:  # a graceful stop must end every server in time
                        if s.proc.poll() is None:
                            rc = s.stop(signal.SIGQUIT, timeout=10)
                            assert rc == 0, "tlsgate exited with %s after SIGQUIT" % rc
                            left = children_in_group(s.pid)
                            assert not left, "processes left after the master exited: %s" % left
                finally:
                    for s in env.servers:
                        s.kill()
                check_logs(env)
                status = "PASS"
                if name in _state["known"]:
                    status = "XPASS (passes now: remove %r from KNOWN_FAILURES)" % name
                print("%s %s (%.1fs)" % (status, name, time.monotonic() - t1), flush=True)
            except SkipTest as e:
                print("SKIPPED %s: %s" % (name, e), flush=True)
            except Exception as e:  # AssertionError and anything unexpected
                if name in _state["known"] and not isinstance(e, TimeoutError):
                    print("XFAIL %s (%s): %s" % (name, _state["known"][name], first_line(e)),
                          flush=True)
                else:
                    failed.append(name)
                    keep = True
                    print("FAIL %s (%.1fs): %s" % (name, time.monotonic() - t1,
                                                   first_line(e)), flush=True)
                    traceback.print_exc(file=sys.stdout)
                    if env:
                        dump_logs(env)
                if isinstance(e, TimeoutError):
                    break
            finally:
                for s in env.servers if env else ():
                    s.out.close()
                if env and keep:
                    print("(kept %s for inspection)" % env.dir)
                elif env:
                    shutil.rmtree(env.dir, ignore_errors=True)
    finally:
        signal.alarm(0)
        for d in [_state["certdir"]] + _state["shared_dirs"]:
            if d:
                shutil.rmtree(d, ignore_errors=True)
    print("%d test(s), %d failed, %.1fs%s" % (len(tests), len(failed), time.monotonic() - t0,
                                              (": " + ", ".join(failed)) if failed else ""))
    sys.exit(1 if failed else 0)
