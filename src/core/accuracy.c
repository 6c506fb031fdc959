// accuracy.c: significant digits of a result against an fp64 reference, histogram, accuracy ratio.
#include "internal.h"

#include <math.h>
#include <string.h>

#define MSP__MAX_DIGITS 17

// Eq. 3 of Zhao et al., "Block-wise dynamic mixed-precision SpMV": n digits when
// E_rel < 5 * 10^-n. The logarithm gives the estimate; the loops make it exact at the edges
// (log10 near an integer can land on either side).
int msp_significant_digits(double y, double ref) {
  if (y == ref) return MSP__MAX_DIGITS;
  if (!isfinite(y) || !isfinite(ref) || ref == 0.0) return 0;
  double e = fabs(y - ref) / fabs(ref);
  if (!(e < 5.0)) return 0;
  int n = (int)floor(log10(5.0 / e));
  if (n < 0) n = 0;
  if (n > MSP__MAX_DIGITS) n = MSP__MAX_DIGITS;
  while (n < MSP__MAX_DIGITS && e < 5.0 * pow(10.0, -(double)(n + 1)))
    n++;
  while (n > 0 && !(e < 5.0 * pow(10.0, -(double)n)))
    n--;
  return n;
}

msp_status msp_accuracy_compare(int64_t n, const double *y, const double *ref, msp_accuracy *acc) {
  MSP_CHECK_ARG(acc, "msp_accuracy_compare: acc is NULL");
  MSP_CHECK_ARG(n >= 0, "msp_accuracy_compare: n = %lld", (long long)n);
  MSP_CHECK_ARG(n == 0 || (y && ref), "msp_accuracy_compare: y or ref is NULL");
  memset(acc, 0, sizeof *acc);
  acc->n = n;
  int64_t ge7 = 0;
  double sum = 0;
  int mind = MSP__MAX_DIGITS;
  for (int64_t i = 0; i < n; i++) {
    int d = msp_significant_digits(y[i], ref[i]);
    acc->hist[d < MSP_ACCURACY_BINS - 1 ? d : MSP_ACCURACY_BINS - 1]++;
    ge7 += d >= 7;
    sum += d;
    if (d < mind) mind = d;
    if (ref[i] != 0.0 && isfinite(ref[i])) {
      double e = fabs(y[i] - ref[i]) / fabs(ref[i]);
      if (e > acc->max_rel_error || isnan(e)) acc->max_rel_error = e;
    }
  }
  acc->ratio = n ? (double)ge7 / (double)n : 1.0;
  acc->mean_digits = n ? sum / (double)n : MSP__MAX_DIGITS;
  acc->min_digits = n ? mind : MSP__MAX_DIGITS;
  return MSP_SUCCESS;
}
