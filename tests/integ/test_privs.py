#!/usr/bin/env python3
"""Privileges and keys: `user` (workers' uid/gid from /proc), root without `user` refused,
`working_directory` (cwd, dumpable), key file mode warnings (start and -t),
`ssl_password_file`, private keys only in memory left out of core dumps (VmFlags "dd" in
/proc/PID/smaps, the key's bytes searched in /proc/PID/mem), keys gone from the master's
memory after a reload that drops them.

Most tests need root (CI runs as root) and print SKIPPED otherwise.

Usage: python3 tests/integ/test_privs.py BIN [TEST...]
"""
import grp
import os
import pwd
import re
import resource
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def need_root():
    if os.geteuid() != 0:
        h.skip("needs root")


def nobody():
    """(uid, gid, user, group) of nobody and its group (nogroup on Debian)."""
    pw = pwd.getpwnam("nobody")
    for g in ("nogroup", "nobody"):
        try:
            return pw.pw_uid, grp.getgrnam(g).gr_gid, "nobody", g
        except KeyError:
            continue
    h.skip("no nogroup/nobody group")


def conf_text(env, port, main, server_extra="", key=None, cert=None, user=True):
    crt, k = env.certs["a_ec"]
    return ("%s%s\nerror_log %s info;\npid %s;\nevents { worker_connections 64; }\n"
            "http { server { listen 127.0.0.1:%d ssl; server_name a.test;"
            " ssl_certificate %s; ssl_certificate_key %s; root %s; %s"
            " location = /who { return 200 \"a\"; } } }\n") % (
                h.USER_LINE if user else "", main, env.log, env.pidfile, port, cert or crt,
                key or k, env.html, server_extra)


def open_dirs(env):
    """Let an unprivileged worker reach env's html and logs (mkdtemp makes 0700)."""
    os.chmod(env.dir, 0o755)


def ids(pid):
    with open("/proc/%d/status" % pid) as f:
        st = f.read()
    uids = [int(x) for x in re.search(r"^Uid:\s+(.*)$", st, re.M).group(1).split()]
    gids = [int(x) for x in re.search(r"^Gid:\s+(.*)$", st, re.M).group(1).split()]
    groups = [int(x) for x in re.search(r"^Groups:[ \t]*(.*)$", st, re.M).group(1).split()]
    return uids, gids, groups


def get_who(env, port):
    with env.tls_socket(port) as s:
        s.sendall(b"GET /who HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        r, _ = h.read_response(s)
        return r.status, r.body


# ---------------------------------------------------------------- user


def test_root_without_user_refused(env):
    need_root()
    port = env.port()
    p = env.write("tlsgate.conf", conf_text(env, port, "", user=False))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 1, r
    assert 'running as root without the "user" directive' in r.stderr, r.stderr
    srv = env.start(p)
    assert srv.proc.wait(10) == 1, "started as root without user"
    assert "user nobody nogroup;" in srv.output(), srv.output()
    # "user root;" is the deliberate choice: accepted, with a warning
    p = env.write("root.conf", conf_text(env, port, "user root;", user=False))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 0 and "[warn]" not in r.stderr, r.stderr


def test_user_nobody(env):
    need_root()
    uid, gid, user, group = nobody()
    open_dirs(env)
    port = env.port()
    p = env.write("tlsgate.conf", conf_text(env, port, "user %s %s;" % (user, group),
                                            user=False))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 0 and "[warn]" not in r.stderr, r.stderr
    srv = env.start(p, port=port)
    w = srv.wait_workers(1)[0]
    uids, gids, groups = ids(w)
    assert uids == [uid] * 4, "worker uids %r, want %d" % (uids, uid)
    assert gids == [gid] * 4, "worker gids %r, want %d" % (gids, gid)
    assert 0 not in groups, "worker kept root's groups: %r" % groups
    assert ids(srv.pid)[0][0] == 0, "the master is not root any more"
    assert get_who(env, port) == (200, b"a")
    # the master keeps reading keys as root: a reload works, the new worker is nobody too
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: srv.workers() and srv.workers() != [w], 10, what="new worker")
    w2 = srv.wait_workers(1)[0]
    assert ids(w2)[0] == [uid] * 4
    assert get_who(env, port) == (200, b"a")
    # logs belong to the workers' user, so they reopen them after a rotation
    assert os.stat(env.log).st_uid == uid, "error log not given to the workers' user"
    os.rename(env.log, env.log + ".1")
    srv.send(signal.SIGUSR1)
    h.wait_until(lambda: os.path.exists(env.log), 5, what="the reopened error log")
    get_who(env, port)
    h.wait_until(lambda: os.stat(env.log).st_uid == uid, 5, what="chown of the new log")
    with open(env.log + ".1") as f:
        old = f.read()
    assert "cannot reopen" not in old + srv.log_text(), old[-2000:]


def test_user_unknown(env):
    port = env.port()
    p = env.write("tlsgate.conf", conf_text(env, port, "user no-such-user-tlsgate;",
                                            user=False))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 1 and 'unknown user "no-such-user-tlsgate"' in r.stderr, r.stderr
    p = env.write("g.conf", conf_text(env, port, "user root no-such-group-tlsgate;",
                                      user=False))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 1 and 'unknown group "no-such-group-tlsgate"' in r.stderr, r.stderr


def test_working_directory(env):
    need_root()
    uid, gid, user, group = nobody()
    open_dirs(env)
    wd = env.path("cores")
    os.mkdir(wd)
    port = env.port()
    p = env.write("tlsgate.conf", conf_text(env, port, "user %s %s; working_directory %s;" %
                                            (user, group, wd), user=False))
    srv = env.start(p, port=port)
    w = srv.wait_workers(1)[0]
    assert os.readlink("/proc/%d/cwd" % w) == wd
    # dumpable again (the kernel owns /proc/PID of a non-dumpable process by root)
    assert os.stat("/proc/%d/status" % w).st_uid == uid, "worker not dumpable"
    srv.stop()
    # without working_directory a worker that changed credentials stays non-dumpable
    port = env.port()
    p = env.write("b.conf", conf_text(env, port, "user %s %s;" % (user, group), user=False))
    srv = env.start(p, port=port)
    w = srv.wait_workers(1)[0]
    assert os.stat("/proc/%d/status" % w).st_uid == 0, "worker dumpable without working_directory"
    p = env.write("c.conf", conf_text(env, port, "working_directory %s;" % env.path("nope")))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 1 and "working_directory" in r.stderr, r.stderr


# ---------------------------------------------------------------- key files


def test_key_mode_warning(env):
    crt, key = env.certs["a_ec"]
    k = env.write("k.key", open(key, "rb").read(), mode=0o644)
    port = env.port()
    p = env.write("tlsgate.conf", conf_text(env, port, "", key=k))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 0, r.stderr
    assert re.search(r"\[warn\] .*ssl_certificate_key: \"%s\" is accessible to everyone "
                     r"\(mode 0644\)" % re.escape(k), r.stderr), r.stderr
    os.chmod(k, 0o640)
    r = h.run([h.binary(), "-t", "-c", p])
    assert "accessible to its group (mode 0640)" in r.stderr, r.stderr
    srv = env.start(p, port=port)
    assert "accessible to its group" in srv.log_text(), srv.log_text()
    assert "accessible to its group" in srv.output()
    srv.stop()
    os.chmod(k, 0o600)
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 0 and "[warn]" not in r.stderr, r.stderr


def test_ssl_password_file(env):
    crt, key = env.certs["a_ec"]
    enc = env.path("enc.key")
    h.run(["openssl", "pkey", "-in", key, "-out", enc, "-aes256", "-passout",
           "pass:s3cret two"], check=True)
    os.chmod(enc, 0o600)
    assert b"ENCRYPTED" in open(enc, "rb").read()
    port = env.port()
    pw = env.write("pw", "wrong\r\n\nalso wrong\ns3cret two\n", mode=0o600)
    p = env.write("tlsgate.conf", conf_text(env, port, "", key=enc,
                                            server_extra="ssl_password_file %s;" % pw))
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 0, r.stderr
    env.start(p, port=port)
    assert get_who(env, port) == (200, b"a")
    # wrong passphrases only: a clear error naming the file and the count
    env.write("pw", "wrong\nalso wrong\n")
    r = h.run([h.binary(), "-t", "-c", p])
    assert r.returncode == 1 and "tried 2 passphrase(s) from \"%s\"" % pw in r.stderr, r.stderr
    # no password file: an error, never a prompt (stdin is a terminal-less pipe here)
    p2 = env.write("nopw.conf", conf_text(env, port, "", key=enc))
    t0 = time.monotonic()
    r = h.run([h.binary(), "-t", "-c", p2], input="", timeout=10)
    assert r.returncode == 1 and "ssl_certificate_key: cannot load" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 5
    # missing password file
    p3 = env.write("nofile.conf", conf_text(env, port, "", key=enc,
                                            server_extra="ssl_password_file %s;" %
                                            env.path("none")))
    r = h.run([h.binary(), "-t", "-c", p3])
    assert r.returncode == 1 and "cannot read ssl_password_file" in r.stderr, r.stderr
    # an unencrypted key with a password file loads as is
    p4 = env.write("plain.conf", conf_text(env, port, "", server_extra="ssl_password_file %s;"
                                           % pw))
    assert h.run([h.binary(), "-t", "-c", p4]).returncode == 0


# ---------------------------------------------------------------- key memory


def key_secret(path):
    """A secret of a PEM key, big-endian: the P-256 private scalar (32 bytes) or the RSA
    prime1 (p)."""
    t = h.run(["openssl", "pkey", "-in", path, "-text", "-noout"], check=True).stdout
    m = re.search(r"(?:priv|prime1):\s*\n((?:\s+[0-9a-f:]+\n)+)", t)
    b = bytes.fromhex(re.sub(r"[\s:]", "", m.group(1))).lstrip(b"\0")
    return b.rjust(32, b"\0") if "priv:" in t else b


def find_in_memory(pid, needles):
    """[(needle name, address, in a VM_DONTDUMP mapping, mapping name)] for every
    occurrence of each needle in the readable mappings of pid."""
    flags, cur = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for ln in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", ln)
            if m:
                cur = int(m.group(1), 16)
            elif ln.startswith("VmFlags:"):
                flags[cur] = ln.split()[1:]
    hits = []
    names = {v: k for k, v in needles.items()}
    pattern = re.compile(b"|".join(re.escape(v) for v in needles.values()))
    with open("/proc/%d/maps" % pid) as f:
        maps = f.read().splitlines()
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
        for ln in maps:
            parts = ln.split()
            a, b = (int(x, 16) for x in parts[0].split("-"))
            # ASan's shadow memory (256 MiB and terabytes of reserved address space) is
            # never a heap of ours: the servers here use a few MiB
            if "r" not in parts[1] or parts[-1] == "[vvar]" or b - a > (1 << 27):
                continue
            try:
                mem.seek(a)
                data = mem.read(b - a)
            except OSError:
                continue
            for m in pattern.finditer(data):
                hits.append((names[m.group(0)], a + m.start(), "dd" in flags.get(a, []),
                             parts[5] if len(parts) > 5 else "[anon]"))
    return hits


def key_needles(path):
    d = key_secret(path)
    lines = open(path).read().splitlines()
    return {"scalar": d, "scalar-le": d[::-1], "pem": lines[1].encode()}


PROVIDER = 'ssl_provider tlsgate;\nssl_propquery "?provider=tlsgate";\n'


def test_keys_not_in_dumpable_memory(env):
    """Every copy of the private key in the master and a worker (the ECDSA scalar or the
    RSA prime p in either byte order, the PEM text) is in a mapping that core dumps leave
    out, with OpenSSL's default provider and with ours (its own key copies and pools); with
    `ssl_secure_heap 0` they are not (so the search does find keys)."""
    need_root()
    for certname, main, extra in (("a_ec", "", ""), ("a_rsa", "", ""),
                                  ("a_ec", PROVIDER, "ssl_async on;"),
                                  ("a_rsa", PROVIDER, "ssl_async on;")):
        # RSA: OpenSSL's first private operation caches Montgomery contexts of p and q
        # (RSA_FLAG_CACHE_PRIVATE) in the ordinary heap of the worker, beyond our reach
        # (also with our provider, whose key wraps OpenSSL's): only the master is checked
        # then (docs/security.md: the known exception).
        worker_checked = certname == "a_ec"
        crt, key = env.certs[certname]
        needles = key_needles(key)
        port = env.port()
        p = env.write("tlsgate.conf", conf_text(env, port, main, server_extra=extra, key=key,
                                                cert=crt))
        srv = env.start(p, port=port)
        w = srv.wait_workers(1)[0]
        for _ in range(5):  # handshakes: the key is used (signatures) in the worker
            assert get_who(env, port) == (200, b"a")
        for pid, what in ((srv.pid, "master"), (w, "worker"))[:2 if worker_checked else 1]:
            hits = find_in_memory(pid, needles)
            bad = [x for x in hits if not x[2]]
            assert not bad, "%s %s %s: key bytes in dumpable memory: %r" % (
                certname, main.strip(), what, bad)
            assert any(x[0].startswith("scalar") for x in hits), "%s: key not found" % what
        srv.stop()
    port = env.port()
    p = env.write("off.conf", conf_text(env, port, "ssl_secure_heap 0;"))
    srv = env.start(p, port=port)
    get_who(env, port)
    hits = find_in_memory(srv.pid, key_needles(env.certs["a_ec"][1]))
    assert any(not x[2] for x in hits), "without the secure heap the key should be found: %r" % hits


def _core_unlimited():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def sanitized():
    """Is the binary built with AddressSanitizer (which turns core dumps off)?"""
    with open(h.binary(), "rb") as f:
        return b"__asan_init" in f.read()


def test_core_dump_has_no_key(env):
    """A worker that crashes (SIGSEGV) with working_directory dumps core there, and the
    core holds no copy of the private ECDSA key (OpenSSL's default provider and ours; RSA
    is the documented exception); without working_directory it dumps no core at all."""
    need_root()
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if "|" in pattern or "/" in pattern:
        h.skip("core_pattern %r does not write into the working directory" % pattern)
    if sanitized():
        h.skip("AddressSanitizer build: ASan disables core dumps")
    env.allow_log = True  # "exited on signal 11 (core dumped)" is an [alert]
    # the last case is the control: without the secure heap the dump does hold the key
    for certname, main, extra in (("a_ec", "", ""), ("a_ec", PROVIDER, "ssl_async on;"),
                                  ("a_ec", "ssl_secure_heap 0;", "")):
        crt, key = env.certs[certname]
        wd = env.path("cores-%s-%d" % (certname, len(main)))
        os.mkdir(wd)
        port = env.port()
        p = env.write("tlsgate.conf", conf_text(env, port, main + "working_directory %s;" % wd,
                                                server_extra=extra, key=key, cert=crt))
        srv = env.start(p, port=port, preexec=_core_unlimited)
        w = srv.wait_workers(1)[0]
        for _ in range(5):
            assert get_who(env, port) == (200, b"a")
        os.kill(w, signal.SIGSEGV)
        h.wait_until(lambda: "process %d exited on signal 11 (core dumped)" % w in srv.log_text(),
                     20, what="the worker's core dump")
        cores = [f for f in os.listdir(wd) if f.startswith("core")]
        assert cores, "no core file in %s: %r" % (wd, os.listdir(wd))
        with open(os.path.join(wd, cores[0]), "rb") as f:
            core = f.read()
        os.unlink(os.path.join(wd, cores[0]))
        assert len(core) > 100000, "core file too small (%d bytes)" % len(core)
        found = [name for name, nd in key_needles(key).items() if nd in core]
        if "ssl_secure_heap 0" in main:
            assert found, "control: the key is not found in a dump without the secure heap"
        else:
            assert not found, "%s %s: the core dump holds the key (%s)" % (
                certname, main.strip(), found)
        srv.stop()
    # no working_directory: no core at all (the worker's cwd is the server's, env.dir)
    port = env.port()
    p = env.write("tlsgate.conf", conf_text(env, port, ""))
    dumped = srv.log_text().count("core dumped")
    srv = env.start(p, port=port, preexec=_core_unlimited)
    w = srv.wait_workers(1)[0]
    # the worker has dropped its dumpable flag once it serves: a signal before that (the
    # worker just forked, a loaded machine) would find it still dumpable
    assert get_who(env, port) == (200, b"a")
    os.kill(w, signal.SIGSEGV)
    h.wait_until(lambda: "process %d exited on signal 11" % w in srv.log_text(), 10,
                 what="the crash")
    assert srv.log_text().count("core dumped") == dumped, "a core was dumped"
    assert not [f for f in os.listdir(env.dir) if re.match(r"core(\.\d+)?$", f)]


def test_key_wiped_after_reload(env):
    """A reload whose configuration drops a key: the master's memory no longer holds it
    (freed keys are cleansed), the kept key is still there."""
    need_root()
    port = env.port()
    crt, key = env.certs["a_ec"]
    # a second ECDSA key for the block that goes away
    k2, c2 = env.path("gone.key"), env.path("gone.crt")
    h.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
           "-nodes", "-keyout", k2, "-out", c2, "-subj", "/CN=gone.test", "-days", "2"],
          check=True)
    os.chmod(k2, 0o600)
    two = conf_text(env, port, "").replace(
        "http { ", "http { server { listen 127.0.0.1:%d ssl; server_name gone.test;"
        " ssl_certificate %s; ssl_certificate_key %s; root %s; } " % (port, c2, k2, env.html))
    p = env.write("tlsgate.conf", two)
    srv = env.start(p, port=port)
    gone, kept = key_needles(k2), key_needles(key)
    gone = {"scalar": gone["scalar"], "scalar-le": gone["scalar-le"]}
    kept = {"scalar": kept["scalar"], "scalar-le": kept["scalar-le"]}
    assert find_in_memory(srv.pid, gone), "the key to drop is not in the master's memory"
    env.write("tlsgate.conf", conf_text(env, port, ""))
    old = srv.wait_workers(1)
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: "configuration reloaded" in srv.log_text(), 10, what="reload")
    h.wait_until(lambda: srv.workers() and not set(old) & set(srv.workers()), 10,
                 what="old workers gone")
    left = find_in_memory(srv.pid, gone)
    assert not left, "the dropped key is still in the master's memory: %r" % left
    assert find_in_memory(srv.pid, kept), "the kept key vanished"
    assert get_who(env, port) == (200, b"a")


def _ptrace_exit_stop(pid):
    """Seize pid with PTRACE_O_TRACEEXIT: it stops inside exit, after the program's own
    cleanup and before the kernel drops its memory. Returns a function that waits for
    that stop (timeout s) and one that lets it finish (detach)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    PTRACE_SEIZE, PTRACE_DETACH, PTRACE_CONT = 0x4206, 17, 7
    PTRACE_O_TRACEEXIT, PTRACE_EVENT_EXIT, WALL = 0x40, 6, 0x40000000
    if libc.ptrace(PTRACE_SEIZE, pid, None, ctypes.c_void_p(PTRACE_O_TRACEEXIT)) != 0:
        h.skip("ptrace(PTRACE_SEIZE) failed: errno %d" % ctypes.get_errno())

    def wait_exit(timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            wpid, status = os.waitpid(pid, WALL | os.WNOHANG)
            if wpid == 0:
                time.sleep(0.02)
                continue
            if os.WIFSTOPPED(status) and (status >> 16) == PTRACE_EVENT_EXIT:
                return True
            if os.WIFSTOPPED(status):  # a signal stop: pass the signal on
                libc.ptrace(PTRACE_CONT, pid, None, ctypes.c_void_p(os.WSTOPSIG(status)))
                continue
            return False  # gone without the exit stop
        return False

    def release():
        libc.ptrace(PTRACE_DETACH, pid, None, None)

    return wait_exit, release


def test_key_wiped_at_exit(env):
    """A worker that exits (graceful stop) holds no copy of the private key once its own
    cleanup is done: stopped by ptrace at its exit (PTRACE_O_TRACEEXIT), its memory is
    searched like a live process's. The ECDSA key, with OpenSSL's default provider and with
    ours. The controls: the same search just before the stop finds the key, and so does
    the exit stop of a worker killed with SIGKILL (no cleanup; checked by hand)."""
    need_root()
    if sanitized():
        h.skip("AddressSanitizer build: LeakSanitizer ptraces the process at exit itself")
    for main, extra in (("", ""), (PROVIDER, "ssl_async on;")):
        crt, key = env.certs["a_ec"]
        needles = key_needles(key)
        needles = {"scalar": needles["scalar"], "scalar-le": needles["scalar-le"]}
        port = env.port()
        p = env.write("tlsgate.conf", conf_text(env, port, main, server_extra=extra))
        srv = env.start(p, port=port)
        w = srv.wait_workers(1)[0]
        for _ in range(5):
            assert get_who(env, port) == (200, b"a")
        assert find_in_memory(w, needles), "control: the worker's memory holds no key"
        wait_exit, release = _ptrace_exit_stop(w)
        try:
            srv.send(signal.SIGQUIT)
            assert wait_exit(20), "the worker did not stop at its exit"
            left = find_in_memory(w, needles)
        finally:
            release()
        assert not left, "%s: key bytes left in the exiting worker: %r" % (main.strip(), left)
        srv.stop()


if __name__ == "__main__":
    h.main(globals())
