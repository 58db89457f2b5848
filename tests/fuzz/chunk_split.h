/*
 * chunk_split_run(): the chunked body decoder of gw/http/parser.h fed one input in pieces,
 * shared by the fuzz target tests/fuzz/http_request.c and the unit test
 * tests/unit/http_parser_test.c, which both decode one input with several splits and compare
 * the results. The includer defines CHUNK_SPLIT_CHECK(cond) first, as its own assertion
 * (CHECK in a fuzz target, assert_true in a cmocka test).
 */
#ifndef TLSGATE_TESTS_CHUNK_SPLIT_H
#define TLSGATE_TESTS_CHUNK_SPLIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/parser.h"

#ifndef CHUNK_SPLIT_CHECK
#error "define CHUNK_SPLIT_CHECK(cond) before including chunk_split.h"
#endif

struct chunk_out {
    int status;      /* the first non-zero status gw_http_chunked_decode returned, else 0 */
    size_t consumed; /* input bytes consumed in all */
    size_t len;      /* decoded bytes written to out */
};

/*
 * Decode in[0..n) as a chunked body into out (room for n bytes: a body never decodes to
 * more than its encoding) with max_body as gw_http_chunked_decode's (bytes, 0 = no limit),
 * fed in pieces: seed 0 = all at once, 1 = byte by byte, otherwise pseudo-random pieces of
 * 1..max_piece bytes (max_piece >= 1) drawn from seed. Each piece is a heap block of exactly
 * its size, so AddressSanitizer reports a read past it. Stops at the first non-zero status.
 * Checks after every call: the status is 0, 1, -400 or -413; consumed was set and is at most
 * the piece; the decoded length is at most consumed; a 0 took the whole piece; the decoder's
 * total equals the bytes decoded so far and stays within max_body.
 */
static inline struct chunk_out chunk_split_run(const char *in, size_t n, uint32_t seed,
                                               size_t max_piece, uint64_t max_body, char *out)
{
    struct chunk_out res = {0, 0, 0};
    gw_http_chunked_t d;
    size_t pos = 0;
    uint32_t rnd = seed;

    gw_http_chunked_init(&d);
    while (pos < n) {
        size_t piece = n - pos;
        if (seed == 1) {
            piece = 1;
        } else if (seed > 1) {
            rnd = rnd * 1103515245u + 12345u;
            size_t want = 1 + (rnd >> 16) % max_piece;
            if (want < piece)
                piece = want;
        }
        char *tmp = malloc(piece);
        CHUNK_SPLIT_CHECK(tmp != NULL);
        memcpy(tmp, in + pos, piece);
        size_t len = piece, consumed = SIZE_MAX; /* SIZE_MAX: the decoder must set it */
        int r = gw_http_chunked_decode(&d, tmp, &len, &consumed, max_body);
        CHUNK_SPLIT_CHECK(r == 0 || r == 1 || r == -400 || r == -413);
        CHUNK_SPLIT_CHECK(consumed <= piece && len <= consumed);
        CHUNK_SPLIT_CHECK(r != 0 || consumed == piece);
        memcpy(out + res.len, tmp, len);
        free(tmp);
        res.len += len;
        res.consumed += consumed;
        pos += piece;
        CHUNK_SPLIT_CHECK(d.total == res.len);
        CHUNK_SPLIT_CHECK(max_body == 0 || d.total <= max_body);
        if (r != 0) {
            res.status = r;
            break;
        }
    }
    return res;
}

#endif
