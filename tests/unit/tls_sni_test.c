/*
 * Unit test of gw/tls/sni.c: gw_tls_parse_sni, the server_name extension body (RFC 6066
 * §3). Every return: a host_name found (first entry, after another name type, the first
 * of two), no host_name (0), and each malformation (-1): short input, list length that
 * disagrees with the body, an entry longer than the list, an empty name, trailing bytes.
 * The fuzz target tests/fuzz/sni_ext.c throws random bodies at it; this pins the answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unit_test.h"

#include "tls/sni.h"

/* parse b (n bytes); on 1 the name must equal want */
static int parse(const unsigned char *b, size_t n, const char *want)
{
    const unsigned char *name = NULL;
    size_t len = 0;
    int rc = gw_tls_parse_sni(b, n, &name, &len);
    if (rc == 1) {
        assert_non_null(want);
        assert_int_equal(len, want != NULL ? strlen(want) : SIZE_MAX); /* -O3 sees want = NULL */
        assert_memory_equal(name, want, len);
        assert_true(name >= b && name + len <= b + n); /* points into the input */
    }
    return rc;
}

static void test_one_host_name(void **state)
{
    (void)state;
    static const unsigned char b[] = {0x00, 0x0e, 0x00, 0x00, 0x0b, 'e', 'x', 'a',
                                      'm',  'p',  'l',  'e',  '.',  'c', 'o', 'm'};
    assert_int_equal(parse(b, sizeof(b), "example.com"), 1);
}

static void test_host_name_after_other_type(void **state)
{
    (void)state;
    /* type 7 (unknown) "xy", then host_name "a.b" */
    static const unsigned char b[] = {0x00, 0x0b, 0x07, 0x00, 0x02, 'x', 'y',
                                      0x00, 0x00, 0x03, 'a',  '.',  'b'};
    assert_int_equal(parse(b, sizeof(b), "a.b"), 1);
}

static void test_first_of_two_host_names(void **state)
{
    (void)state;
    /* "MUST NOT contain more than one name of the same name_type": the first counts */
    static const unsigned char b[] = {0x00, 0x0a, 0x00, 0x00, 0x02, 'a',
                                      'a',  0x00, 0x00, 0x02, 'b',  'b'};
    assert_int_equal(parse(b, sizeof(b), "aa"), 1);
}

static void test_no_host_name(void **state)
{
    (void)state;
    static const unsigned char b[] = {0x00, 0x04, 0x05, 0x00, 0x01, 'z'};
    assert_int_equal(parse(b, sizeof(b), NULL), 0);
}

static void test_malformed(void **state)
{
    (void)state;
    static const unsigned char one[] = {0x00};
    assert_int_equal(parse(one, 0, NULL), -1); /* empty */
    assert_int_equal(parse(one, 1, NULL), -1); /* no room for the list length */
    /* list length 2 < 3: no room for one entry */
    static const unsigned char tiny[] = {0x00, 0x02, 0x00, 0x00};
    assert_int_equal(parse(tiny, sizeof(tiny), NULL), -1);
    /* list length one more / one less than the body */
    static const unsigned char longer[] = {0x00, 0x07, 0x00, 0x00, 0x03, 'a', 'b', 'c'};
    assert_int_equal(parse(longer, sizeof(longer), NULL), -1);
    static const unsigned char shorter[] = {0x00, 0x05, 0x00, 0x00, 0x03, 'a', 'b', 'c'};
    assert_int_equal(parse(shorter, sizeof(shorter), NULL), -1);
    /* entry length beyond the list */
    static const unsigned char over[] = {0x00, 0x06, 0x00, 0x00, 0x04, 'a', 'b', 'c'};
    assert_int_equal(parse(over, sizeof(over), NULL), -1);
    /* HostName<1..2^16-1>: an empty name */
    static const unsigned char empty[] = {0x00, 0x03, 0x00, 0x00, 0x00};
    assert_int_equal(parse(empty, sizeof(empty), NULL), -1);
    /* an entry of another type, then 2 bytes that cannot hold an entry header */
    static const unsigned char tail[] = {0x00, 0x06, 0x05, 0x00, 0x01, 'z', 0x00, 0x00};
    assert_int_equal(parse(tail, sizeof(tail), NULL), -1);
}

static void test_longest_name(void **state)
{
    (void)state;
    /* a 65,530-byte name fills the 16-bit list length exactly (65,533 = 3 + 65,530) */
    static unsigned char b[2 + 65533];
    size_t l = 65530;
    b[0] = 0xff;
    b[1] = 0xfd;
    b[2] = 0x00;
    b[3] = (unsigned char)(l >> 8);
    b[4] = (unsigned char)l;
    memset(b + 5, 'n', l);
    const unsigned char *name = NULL;
    size_t len = 0;
    assert_int_equal(gw_tls_parse_sni(b, sizeof(b), &name, &len), 1);
    assert_int_equal(len, l);
    assert_ptr_equal(name, b + 5);
}

int main(void)
{
    return UNIT_RUN(
        cmocka_unit_test(test_one_host_name), cmocka_unit_test(test_host_name_after_other_type),
        cmocka_unit_test(test_first_of_two_host_names), cmocka_unit_test(test_no_host_name),
        cmocka_unit_test(test_malformed), cmocka_unit_test(test_longest_name));
}
