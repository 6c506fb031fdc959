// convert.h: what convert.c shares with convert_digits.c (AUTO with a requested accuracy), and
// the CSR kernel rule by storage precision (matrix.c), which conversion applies.
#ifndef MSP_CONVERT_H
#define MSP_CONVERT_H

#include "internal.h"

// The CSR kernel rule (msp_choose_kernel) for values stored in precision p: 2-byte values on
// large near-banded matrices of short rows take the scalar kernel where it says vector
// (matrix.c has the measurements).
msp_kernel msp__choose_kernel_prec(const msp_matrix_stats *s, msp_precision p, char *reason,
                                   size_t n);
// The CUDA backend's AUTO format (msp__choose_format) refined for values stored in precision p:
// COO for small matrices of irregular rows (fp64 and fp32) and, in fp64, of near-uniform rows
// outside the vector kernel's band of mean lengths (convert.c has the measurements).
msp_format msp__choose_format_prec(const msp_matrix_stats *s, msp_precision p, char *reason,
                                   size_t n);
// Does format f have a kernel for values stored in precision p on ctx's backend?
int msp__convert_has_kernel(msp_context ctx, msp_format f, msp_precision p);
// b bytes as text ("12.3 MB") into out[n].
void msp__convert_fmt_bytes(char *out, size_t n, double b);
// MSP_ERR_FILL_LIMIT when a format's planned bytes exceed max_fill times A's CSR bytes.
msp_status msp__convert_fill_check(const char *tag, double bytes, const msp_matrix A,
                                   const msp_convert_options *o);
// Plan and build format f's host data from A (what: its description).
msp_status msp__convert_build_format(const msp_matrix A, msp_format f, msp_convert_options *o,
                                     void **fmt, char *what, size_t n);
// B from A in format f (prebuilt: f's host data built already, taken over; why: AUTO's reason).
msp_status msp__convert_built(msp_context ctx, const msp_matrix A, msp_format f,
                              const msp_convert_options *opts, const char *why, void *prebuilt,
                              msp_matrix *out);
// The length of the AUTO rule's reason: the rule, its refinement for the values' precision and a
// fallback, whole (the matrix's reason, 1024, adds the kernel's).
#define MSP__RULE_REASON 512
// The format of the backend's AUTO rule (s gets the statistics, why the reason).
msp_status msp__convert_auto_rule(msp_context ctx, const msp_matrix A,
                                  const msp_convert_options *opts, msp_matrix_stats *s,
                                  char why[MSP__RULE_REASON], msp_format *out);
// AUTO with opts->bdmp_digits = D > 0 (convert_digits.c); bdmp_eff (NULL: the measured factors)
// replaces PBP's and TCKI's time per byte (tests).
msp_status msp__convert_auto_digits(msp_context ctx, const msp_matrix A,
                                    const msp_convert_options *opts, const double bdmp_eff[2],
                                    msp_matrix *out);

#endif
