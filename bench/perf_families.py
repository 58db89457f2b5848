#!/usr/bin/env python3
"""Where a server's CPU time goes, by function family, from a `perf record` of its worker.

Usage:
  bench/perf_families.py PERF_DATA [--build DIR] [--handshakes N] [--cpu-us-per-hs US]
                         [--title TEXT] [--top K]
  bench/perf_families.py --callgrind CALLGRIND_OUT [--build DIR] [--handshakes N] ...

Reads `perf report --stdio --no-children --sort dso,sym` of PERF_DATA and sorts every
sample into a family: the batched public-key math (mb8), the provider's batching (prov),
the gateway (gw) -- told apart by the static libraries of the build directory (`nm` of
libmb8.a, libtgprov.a, libgw.a) --, libcrypto by family (public key, hashes/ciphers of the
key schedule and the records, algorithm fetches and property queries, ASN.1/X.509,
allocation, errors, random), libssl, libc (malloc, strings, locks), the kernel, and the rest.

Prints a Markdown table: family, share of the samples, and -- given the CPU µs per
handshake measured beside the profile -- µs per handshake; then the top K symbols.
Symbols come from the libraries' symbol tables: Debian's libssl3 keeps only exported
names, so samples in static functions show as the nearest exported one or as [unknown];
run the server with LD_LIBRARY_PATH pointing at an OpenSSL built with symbols for a
finer split (docs/benchmarks.md says how).
With --callgrind, the input is a callgrind dump (bench/callgrind.sh) and the figures are
instructions (Ir) per handshake instead of µs (self costs, all threads).
Exit status: 0, or 2 on bad arguments / unreadable profile.
"""
import argparse
import os
import re
import subprocess
import sys


def own_symbols(build):
    """symbol -> 'mb8' | 'prov' | 'gw' from the build directory's static libraries."""
    owner = {}
    libs = [("mb8", "mb8/libmb8.a"), ("prov", "prov/libtgprov.a"), ("gw", "libgw.a")]
    for name, rel in libs:
        path = os.path.join(build, rel)
        if not os.path.exists(path):
            continue
        out = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                             text=True, check=False).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                owner.setdefault(parts[2], name)
    return owner


def starts(sym, *prefixes):
    return any(sym.startswith(p) for p in prefixes)


CRYPTO_RULES = [
    ("libcrypto: public-key math",
     re.compile(r"^(__)?(ecp_nistz256|ecp_nistp|x25519|ossl_x25519|ossl_ecx|ecx_|bn_|BN_|"
                r"rsaz_|RSA_|rsa_|ossl_rsa|ec_|EC_|ossl_ec|ecdsa|ECDSA|ossl_ecdsa|ecdh|"
                r"ossl_ecdh|mul4x|sqr8x|bn_mul|ossl_bn|fe51|fe64|x25519_fe|ecp_|ossl_ffc|"
                r"ossl_ed25519|ed25519|curve25519|ossl_curve25519|fe_|ge_|cmov$|table_select|slide$|"
                r"copy_conditional|ecp_nistz256|ossl_ec_GFp|ec_GFp|bn2binpad)")),
    ("libcrypto: hashes, HMAC, HKDF, AES-GCM",
     re.compile(r"^(sha|SHA|ossl_sha|aes|AES|aesni|vpaes|gcm|CRYPTO_gcm|ghash|gcm_|ossl_gcm|"
                r"hmac|HMAC|ossl_hmac|kdf_|hkdf|HKDF|EVP_Digest|EVP_MAC|EVP_Cipher|"
                r"EVP_Encrypt|EVP_Decrypt|evp_cipher|EVP_MD_CTX|EVP_CIPHER_CTX|md_|"
                r"generic_|ossl_cipher|ossl_prov_cipher|ossl_digest|keccak|KECCAK|chacha|"
                r"ChaCha|Poly1305|poly1305|ossl_prov_digest|ossl_prov_macctx|tls1_prf|"
                r"ossl_kdf|EVP_KDF|EVP_PKEY_derive)")),
    ("libcrypto: fetches, properties, params, names",
     re.compile(r"^(ossl_method|ossl_property|OSSL_PARAM|ossl_param|evp_generic_fetch|"
                r"ossl_namemap|OPENSSL_LH|lh_|ossl_lib_ctx|ossl_provider|OSSL_PROVIDER|"
                r"CRYPTO_THREAD|ossl_algorithm|evp_keymgmt|EVP_KEYMGMT|evp_pkey_export|"
                r"ossl_decoder|OSSL_DECODER|ossl_encoder|OSSL_ENCODER|OBJ_|ossl_obj|"
                r"EVP_\w+_fetch|EVP_\w+_free|EVP_\w+_up_ref|evp_\w*fetch|inner_evp|"
                r"ossl_store|evp_md_|evp_keyexch|evp_signature|evp_asym|ossl_ht|"
                r"CRYPTO_get_ex|CRYPTO_new_ex|CRYPTO_free_ex|ossl_crypto_|"
                r"EVP_PKEY_CTX_new|EVP_PKEY_CTX_free|evp_pkey_ctx|EVP_PKEY_get|"
                r"EVP_PKEY_set|EVP_PKEY_fromdata|EVP_PKEY_todata|EVP_PKEY_CTX_set|"
                r"EVP_PKEY_CTX_get|EVP_PKEY_new|EVP_PKEY_free|evp_pkey|ossl_prov_|do_name$|"
                r"ossl_tolower|ossl_lh_strcasehash|OPENSSL_strcasecmp|OPENSSL_strncasecmp|"
                r"getrn$|namemap_|namenum_|query_cmp|ossl_sa_|ossl_bsearch|EVP_PKEY_asn1_find|"
                r"int_ctx_new|ENGINE_|ossl_engine|engine_|OPENSSL_init_crypto|load_common|"
                r"evp_kdf_|evp_mac_|cleanup_old_md_data|get_legacy_alg|help_get_legacy|"
                r"CRYPTO_atomic|OPENSSL_sk_|ossl_decoder|ossl_encode_der)")),
    ("libcrypto: ASN.1, X.509, certificate chain",
     re.compile(r"^(ASN1_|asn1_|ossl_asn1|X509|x509|ossl_x509|d2i_|i2d_|c2i_|i2c_|"
                r"check_|build_chain|verify_|internal_verify|X509V3|v3_|GENERAL_NAME|"
                r"ossl_policy|policy_|DIST_POINT|AUTHORITY_)")),
    ("libcrypto: malloc wrappers, cleanse",
     re.compile(r"^(CRYPTO_malloc|CRYPTO_zalloc|CRYPTO_free|CRYPTO_clear_free|"
                r"CRYPTO_realloc|CRYPTO_clear_realloc|CRYPTO_strdup|CRYPTO_strndup|"
                r"CRYPTO_memdup|OPENSSL_cleanse|CRYPTO_secure)")),
    ("libcrypto: error queue", re.compile(r"^(ERR_|ossl_err|err_)")),
    ("libcrypto: WPACKET, BIO", re.compile(r"^(WPACKET_|wpacket_|BIO_|bio_|PACKET_)")),
    ("libcrypto: random", re.compile(r"^(RAND_|ossl_rand|rand_|drbg|ossl_drbg|ctr_)")),
    ("libcrypto: async jobs", re.compile(r"^(ASYNC_|async_|ossl_async)")),
]

LIBC_RULES = [
    ("libc: malloc/free",
     re.compile(r"^(malloc|free|calloc|realloc|_int_|__libc_(malloc|free|calloc|realloc)|"
                r"cfree|malloc_consolidate|tcache|unlink_chunk|sysmalloc|__GI___libc_|"
                r"_mid_memalign|__posix_memalign|aligned_alloc|memalign)")),
    ("libc: strings, memcpy/memset",
     re.compile(r"^(__)?(str|mem|wmem|__str|__mem|bcmp)")),
    ("libc: locks", re.compile(r"^(__)?(pthread_|lll_|__lll|__pthread|___pthread)")),
]


def family(dso, sym, owner):
    base = os.path.basename(dso)
    if dso.startswith("[kernel") or base.startswith("[kernel"):
        if starts(sym, "finish_task_switch", "__schedule", "schedule", "__switch_to",
                  "psi_", "pick_next", "update_curr", "enqueue_", "dequeue_"):
            return "kernel: scheduling"
        return "kernel: syscalls, TCP/IP"
    if base in ("tlsgate", "tlsgate.so") or base.startswith("tlsgate"):
        who = owner.get(sym)
        if who == "mb8":
            return "batched public-key math (mb8)"
        if who == "prov":
            return "provider: batching, pools, glue"
        if who == "gw":
            return "server code (gateway)"
        return "server code (gateway)" if base == "tlsgate" else "provider: batching, pools, glue"
    if base.startswith(("nginx", "haproxy")):
        return "server code (" + base.split(".")[0] + ")"
    if base.startswith("libcrypto"):
        for name, rx in CRYPTO_RULES:
            if rx.search(sym):
                return name
        return "libcrypto: other"
    if base.startswith("libssl"):
        return "libssl"
    if base.startswith("libc.so") or base.startswith("libc-"):
        for name, rx in LIBC_RULES:
            if rx.search(sym):
                return name
        return "libc: other"
    return "other (" + base + ")"


LINE = re.compile(r"^\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$")


def read_callgrind(path):
    """[(Ir, object, function)] self costs of a callgrind dump (all threads), and the total.

    Parses the callgrind format itself (valgrind's docs, "Callgrind Format
    Specification"): name compression "(id) name" for ob/fn/cob/cfn, one cost line per
    position, and after each "calls=" line the inclusive cost of that call, which is not
    the caller's own cost and is skipped."""
    names = {"ob": {}, "fn": {}}
    self_cost = {}
    total = 0
    ob = fn = ""
    skip_next = False
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise RuntimeError(str(e)) from e

    def name(kind, value):
        m = re.match(r"^\((\d+)\)(?:\s+(.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), "?")

    with f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line[0] == "#":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    v = int(parts[1])
                    self_cost[(ob, fn)] = self_cost.get((ob, fn), 0) + v
                    total += v
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                ob = name("ob", value)
            elif key == "fn":
                fn = name("fn", value)
            elif key == "cob":
                name("ob", value)
            elif key == "cfn" or key == "cfi" or key == "cfl":
                if key == "cfn":
                    name("fn", value)
            elif key == "calls":
                skip_next = True
    rows = []
    for (obj, fun), v in self_cost.items():
        if fun.startswith("0x") or fun in ("???", "?"):
            fun = "[unknown " + fun + "]"
        rows.append((v, obj, fun.split("'")[0]))
    return rows, total


def tally(rows, owner):
    """rows of (cost, object path, symbol) -> ({family: cost}, [(cost, object, symbol,
    family)])."""
    fam, syms = {}, []
    for cost, obj, sym in rows:
        f = family(obj, sym, owner)
        fam[f] = fam.get(f, 0) + cost
        syms.append((cost, os.path.basename(obj), sym, f))
    return fam, syms


def print_tables(fam, syms, unit, family_cell, top_head, top_cell, top):
    """The family table (family_cell(cost) -> per-handshake text) and the top-`top` table
    (top_head: its header; top_cell(cost) -> its first column)."""
    total = sum(fam.values())
    print("| family | share | %s |" % unit)
    print("|---|---:|---:|")
    for f, v in sorted(fam.items(), key=lambda kv: -kv[1]):
        print(f"| {f} | {100 * v / total:.1f}% | {family_cell(v)} |")
    print()
    print(top_head)
    print()
    print("| %s | library | %s | family |" % top_cell(None))
    print("|---:|---|---|---|")
    for cost, obj, sym, f in sorted(syms, key=lambda s: -s[0])[:top]:
        print(f"| {top_cell(cost)} | {obj} | `{sym}` | {f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?")
    ap.add_argument("--callgrind", metavar="FILE")
    ap.add_argument("--build", default="build")
    ap.add_argument("--handshakes", type=int, default=0)
    ap.add_argument("--cpu-us-per-hs", type=float, default=0.0)
    ap.add_argument("--title", default="")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    if a.callgrind:
        return callgrind_main(a)
    if not a.data or not os.path.exists(a.data):
        print(f"perf_families.py: {a.data}: no such file", file=sys.stderr)
        return 2
    p = subprocess.run(["perf", "report", "-i", a.data, "--stdio", "--no-children",
                        "--sort", "dso,sym", "-g", "none", "--percent-limit", "0"],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        print(f"perf_families.py: perf report failed: {p.stderr.strip()[:400]}",
              file=sys.stderr)
        return 2
    rows, samples = [], None
    for line in p.stdout.splitlines():
        if line.startswith("# Samples:") or line.startswith("# Event count"):
            samples = samples or line.split(":", 1)[1].strip()
        m = LINE.match(line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(4)))
    fam, syms = tally(rows, own_symbols(a.build))
    total = sum(fam.values())
    if total <= 0:
        print("perf_families.py: no samples in the profile", file=sys.stderr)
        return 2
    us = a.cpu_us_per_hs
    if a.title:
        print(f"**{a.title}** ({samples or '?'} samples"
              + (f", {a.handshakes} handshakes" if a.handshakes else "")
              + (f", {us:.1f} CPU µs per handshake" if us else "") + ")")
        print()
    print_tables(fam, syms, "µs/handshake",
                 lambda v: f"{v / total * us:.1f}" if us else "",
                 f"Top {a.top} symbols:",
                 lambda v: ("share", "symbol") if v is None else f"{100 * v / total:.1f}%",
                 a.top)
    return 0


def callgrind_main(a):
    if not os.path.exists(a.callgrind):
        print(f"perf_families.py: {a.callgrind}: no such file", file=sys.stderr)
        return 2
    try:
        rows, _ = read_callgrind(a.callgrind)
    except RuntimeError as e:
        print(f"perf_families.py: {e}", file=sys.stderr)
        return 2
    fam, syms = tally(rows, own_symbols(a.build))
    counted = sum(fam.values())
    if counted <= 0:
        print("perf_families.py: no costs in the callgrind dump", file=sys.stderr)
        return 2
    hs = a.handshakes or 1
    if a.title:
        print(f"**{a.title}**: {counted / hs:,.0f} instructions per handshake"
              f" ({counted:,} over {hs} handshakes)")
        print()
    print_tables(fam, syms, "instructions/handshake", lambda v: f"{v / hs:,.0f}",
                 f"Top {a.top} functions:",
                 lambda v: ("instructions/handshake", "function") if v is None
                 else f"{v / hs:,.0f}",
                 a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
