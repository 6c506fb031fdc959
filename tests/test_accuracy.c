// test_accuracy.c: msp_significant_digits and msp_accuracy_compare on hand-checked values (paper
// Eq. 2-3, 9).
#include "testlib.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Eq. 3 of Zhao et al., "Block-wise dynamic mixed-precision SpMV": y has n significant digits
// when E_rel = |y - ref| / |ref| < 5 * 10^-n, n the largest such (clamped to 0..17).
static void test_digits(void) {
  // Equal values: 17, whatever the magnitude or sign.
  const double same[] = {1.0, -3.5, 1e-300, 1e300, 0x1.0p-1074, 123456789.0};
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
    CHECK(msp_significant_digits(same[i], same[i]) == 17, "y = ref = %g: %d digits, expected 17",
          same[i], msp_significant_digits(same[i], same[i]));
  // E = 1e-5: 1e-5 < 5 10^-5 (5 digits) but not < 5 10^-6 (6 digits), so 5.
  CHECK(msp_significant_digits(1.0 + 1e-5, 1.0) == 5, "E 1e-5: %d digits, expected 5",
        msp_significant_digits(1.0 + 1e-5, 1.0));
  CHECK(msp_significant_digits(3.0 * (1 - 1e-5), 3.0) == 5, "E 1e-5 below: %d digits, expected 5",
        msp_significant_digits(3.0 * (1 - 1e-5), 3.0));
  // E = 4e-6 < 5 10^-6: 6 digits.
  CHECK(msp_significant_digits(1.000004, 1.0) == 6, "E 4e-6: %d digits, expected 6",
        msp_significant_digits(1.000004, 1.0));
  CHECK(msp_significant_digits(-1.000004, -1.0) == 6, "E 4e-6, negative: %d digits, expected 6",
        msp_significant_digits(-1.000004, -1.0));
  // Either side of each threshold 5 * 10^-n: 4.9 10^-n gives n digits, 5.1 10^-n gives n - 1.
  // (n <= 12 keeps the rounding of 1 + E far from the threshold.)
  for (int n = 1; n <= 12; n++) {
    double p = pow(10.0, -(double)n);
    int below = msp_significant_digits(1.0 + 4.9 * p, 1.0);
    int above = msp_significant_digits(1.0 + 5.1 * p, 1.0);
    CHECK(below == n, "E 4.9e-%d: %d digits, expected %d", n, below, n);
    CHECK(above == n - 1, "E 5.1e-%d: %d digits, expected %d", n, above, n - 1);
  }
  // E >= 5: no digit.
  CHECK(msp_significant_digits(7.0, 1.0) == 0, "E 6: %d digits", msp_significant_digits(7.0, 1.0));
  // Zero reference: exact match 17 (also -0 against +0), anything else 0.
  CHECK(msp_significant_digits(0.0, 0.0) == 17, "0 vs 0");
  CHECK(msp_significant_digits(-0.0, 0.0) == 17, "-0 vs 0");
  CHECK(msp_significant_digits(1e-300, 0.0) == 0, "1e-300 vs 0");
  CHECK(msp_significant_digits(0.0, 1e-300) == 0, "0 vs 1e-300 (E = 1)");
  // Not finite: 0 unless equal (an infinity matching an infinity is an exact match).
  CHECK(msp_significant_digits(NAN, 1.0) == 0, "NaN vs 1");
  CHECK(msp_significant_digits(1.0, NAN) == 0, "1 vs NaN");
  CHECK(msp_significant_digits(NAN, NAN) == 0, "NaN vs NaN");
  CHECK(msp_significant_digits(INFINITY, 1.0) == 0, "inf vs 1");
  CHECK(msp_significant_digits(1.0, INFINITY) == 0, "1 vs inf");
  CHECK(msp_significant_digits(-INFINITY, INFINITY) == 0, "-inf vs inf");
  CHECK(msp_significant_digits(INFINITY, INFINITY) == 17, "inf vs inf");
}

static void test_compare(void) {
  // Eight entries, digits by hand: 17 (exact), 5 (E 1e-5), 6 (E 4e-6), 0 (ref 0, y not), 17 (0 vs
  // 0), 0 (NaN),
  // 7 (E 4e-7), 8 (E 4e-8).
  const double ref[8] = {2.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0};
  const double y[8] = {2.0, 1.0 + 1e-5, 1.000004, 1e-20, 0.0, NAN, 1.0000004, 1.00000004};
  const int want[8] = {17, 5, 6, 0, 17, 0, 7, 8};
  for (int i = 0; i < 8; i++)
    CHECK(msp_significant_digits(y[i], ref[i]) == want[i], "entry %d: %d digits, expected %d", i,
          msp_significant_digits(y[i], ref[i]), want[i]);
  msp_accuracy acc;
  CHECK_OK(msp_accuracy_compare(8, y, ref, &acc));
  CHECK(acc.n == 8, "n %lld", (long long)acc.n);
  int64_t sum = 0;
  for (int d = 0; d < MSP_ACCURACY_BINS; d++)
    sum += acc.hist[d];
  CHECK(sum == 8, "histogram sums to %lld, expected 8", (long long)sum);
  // bins: 0 -> 2 (ref 0 and NaN), 5 -> 1, 6 -> 1, 7 -> 1, >= 8 -> 3 (17, 17, 8)
  const int64_t hist[MSP_ACCURACY_BINS] = {2, 0, 0, 0, 0, 1, 1, 1, 3};
  for (int d = 0; d < MSP_ACCURACY_BINS; d++)
    CHECK(acc.hist[d] == hist[d], "bin %d: %lld, expected %lld", d, (long long)acc.hist[d],
          (long long)hist[d]);
  CHECK(acc.ratio == 4.0 / 8.0, "ratio %g, expected 0.5 (4 of 8 with >= 7 digits)", acc.ratio);
  CHECK(acc.min_digits == 0, "min digits %g", acc.min_digits);
  CHECK(fabs(acc.mean_digits - 60.0 / 8.0) < 1e-12, "mean digits %g, expected %g", acc.mean_digits,
        60.0 / 8.0);
  // A NaN y against a nonzero reference makes the largest relative error NaN (not hidden).
  CHECK(isnan(acc.max_rel_error), "max relative error %g, expected NaN", acc.max_rel_error);

  // Without the NaN: the largest relative error is the 1e-5 entry's (ref 0 entries left out).
  double y2[8];
  memcpy(y2, y, sizeof y2);
  y2[5] = 1.0;
  CHECK_OK(msp_accuracy_compare(8, y2, ref, &acc));
  CHECK(fabs(acc.max_rel_error - 1e-5) < 1e-15, "max relative error %g, expected 1e-5",
        acc.max_rel_error);
  CHECK(acc.ratio == 5.0 / 8.0, "ratio %g, expected 0.625", acc.ratio);

  // y = ref: every entry >= 8 digits, ratio 1, min and mean 17.
  CHECK_OK(msp_accuracy_compare(8, ref, ref, &acc));
  CHECK(acc.hist[MSP_ACCURACY_BINS - 1] == 8, ">= 8 bin %lld",
        (long long)acc.hist[MSP_ACCURACY_BINS - 1]);
  CHECK(acc.ratio == 1.0 && acc.min_digits == 17 && acc.mean_digits == 17,
        "y = ref: ratio %g min %g mean %g", acc.ratio, acc.min_digits, acc.mean_digits);
  CHECK(acc.max_rel_error == 0, "y = ref: max relative error %g", acc.max_rel_error);

  // n = 0 (NULL arrays allowed): empty histogram, ratio 1.
  CHECK_OK(msp_accuracy_compare(0, NULL, NULL, &acc));
  CHECK(acc.n == 0 && acc.ratio == 1.0, "n = 0: n %lld ratio %g", (long long)acc.n, acc.ratio);
  for (int d = 0; d < MSP_ACCURACY_BINS; d++)
    CHECK(acc.hist[d] == 0, "n = 0: bin %d = %lld", d, (long long)acc.hist[d]);
  CHECK_STATUS(msp_accuracy_compare(-1, y, ref, &acc), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_accuracy_compare(8, y, NULL, &acc), MSP_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(msp_accuracy_compare(8, y, ref, NULL), MSP_ERR_INVALID_ARGUMENT);
}

// Many entries with relative errors spread over 1e-17..1: the histogram sums to n and matches
// msp_significant_digits entry by entry; the ratio is the share with >= 7 digits.
static void test_compare_random(void) {
  enum { N = 20000 };
  double *y = malloc(N * sizeof *y), *ref = malloc(N * sizeof *ref);
  if (!y || !ref) {
    CHECK(0, "out of memory");
    free(y);
    free(ref);
    return;
  }
  uint64_t s = 12345;
  int64_t hist[MSP_ACCURACY_BINS] = {0}, ge7 = 0;
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(s >> 11) * 0x1.0p-53;
    ref[i] = (i % 2 ? -1.0 : 1.0) * (0.5 + u) * pow(10.0, (double)(i % 9) - 4.0);
    double e = pow(10.0, -17.0 * u); // relative error 1e-17..1
    y[i] = i % 97 == 0 ? ref[i] : ref[i] * (1 + ((s >> 3) & 1 ? e : -e));
    int d = msp_significant_digits(y[i], ref[i]);
    hist[d < MSP_ACCURACY_BINS - 1 ? d : MSP_ACCURACY_BINS - 1]++;
    ge7 += d >= 7;
  }
  msp_accuracy acc;
  CHECK_OK(msp_accuracy_compare(N, y, ref, &acc));
  int64_t sum = 0;
  for (int d = 0; d < MSP_ACCURACY_BINS; d++) {
    sum += acc.hist[d];
    CHECK(acc.hist[d] == hist[d], "bin %d: %lld, expected %lld", d, (long long)acc.hist[d],
          (long long)hist[d]);
  }
  CHECK(sum == N, "histogram sums to %lld, expected %d", (long long)sum, N);
  CHECK(acc.ratio == (double)ge7 / N, "ratio %g, expected %g", acc.ratio, (double)ge7 / N);
  free(y);
  free(ref);
}

int main(void) {
  test_digits();
  test_compare();
  test_compare_random();
  return msp_test_finish("test_accuracy");
}
