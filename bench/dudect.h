/*
 * bench/dudect.h: the statistics of the dudect-style timing-leak tests (bench/dudect_rsa.c,
 * dudect_ecc.c, dudect_mlkem.c; Reparaz, Balasch, Verbauwhede, "Dude, is my code constant
 * time?", DATE 2017): Welch's t between the two classes of measurements, after cropping
 * at several percentiles of the cycle counts to drop interrupts. |t| > DUDECT_T_LEAK is
 * taken as evidence of a leak.
 */
#ifndef BENCH_DUDECT_H
#define BENCH_DUDECT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUDECT_T_LEAK 4.5
#define DUDECT_NCROP 5
/* keep the measurements up to these percentiles */
static const double dudect_crop[DUDECT_NCROP] = {1.0, 0.99, 0.95, 0.90, 0.75};

static int dudect_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Welch's t of the two classes (cls[i] 0 or 1), keeping only measurements t[i] <= limit
 * cycles; 0 when a class has fewer than 2. */
static double dudect_welch_t(const uint64_t *t, const uint8_t *cls, size_t n, uint64_t limit)
{
    double mean[2] = {0}, m2[2] = {0}, cnt[2] = {0};

    for (size_t i = 0; i < n; i++) { /* Welford's online mean and variance */
        if (t[i] > limit)
            continue;
        int c = cls[i];
        double x = (double)t[i], d = x - mean[c];
        cnt[c] += 1;
        mean[c] += d / cnt[c];
        m2[c] += d * (x - mean[c]);
    }
    if (cnt[0] < 2 || cnt[1] < 2)
        return 0;
    return (mean[0] - mean[1]) /
           sqrt(m2[0] / (cnt[0] - 1) / cnt[0] + m2[1] / (cnt[1] - 1) / cnt[1]);
}

/* sorted = the n measurements t in increasing order (sorted[n / 2] is the median). */
static void dudect_sort(uint64_t *sorted, const uint64_t *t, size_t n)
{
    memcpy(sorted, t, n * sizeof(*t));
    qsort(sorted, n, sizeof(*t), dudect_cmp_u64);
}

/* The largest |t| over the crops (sorted from dudect_sort); with verbose, a line per crop. */
static double dudect_max_t(const uint64_t *t, const uint64_t *sorted, const uint8_t *cls, size_t n,
                           int verbose)
{
    double maxt = 0;

    for (int c = 0; c < DUDECT_NCROP; c++) {
        uint64_t lim = sorted[(size_t)((double)(n - 1) * dudect_crop[c])];
        double tv = dudect_welch_t(t, cls, n, lim);
        if (verbose)
            printf("crop at %3.0f%% (<= %llu cycles): t = %+.2f\n", dudect_crop[c] * 100,
                   (unsigned long long)lim, tv);
        if (fabs(tv) > maxt)
            maxt = fabs(tv);
    }
    return maxt;
}

#endif
