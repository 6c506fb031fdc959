// backend.c: the CPU (OpenMP) backend's dispatch table.
#include "internal.h"

msp_status msp__cpu_dot(msp_context, msp_vector, msp_vector, double *);
msp_status msp__cpu_nrm2(msp_context, msp_vector, double *);
msp_status msp__cpu_nrm1(msp_context, msp_vector, double *);
msp_status msp__cpu_axpby(msp_context, double, msp_vector, double, msp_vector);
msp_status msp__cpu_scale(msp_context, double, msp_vector);
msp_status msp__cpu_copy(msp_context, msp_vector, msp_vector);
msp_status msp__cpu_fill(msp_context, msp_vector, double);

static const msp__backend cpu_backend = {
    .name = "cpu",
    .kind = MSP_BACKEND_CPU,
    .spmv =
        {
            [MSP_FORMAT_CSR] = msp__cpu_csr_spmv,
            [MSP_FORMAT_COO] = msp__cpu_coo_spmv,
            [MSP_FORMAT_BDMP_PBP] = msp__cpu_bdmp_pbp_spmv,
            [MSP_FORMAT_BDMP_TCKI] = msp__cpu_bdmp_tcki_spmv,
            [MSP_FORMAT_ELL] = msp__cpu_ell_spmv,
            [MSP_FORMAT_HLL] = msp__cpu_hll_spmv,
            [MSP_FORMAT_DIA] = msp__cpu_dia_spmv,
            [MSP_FORMAT_HDIA] = msp__cpu_hdia_spmv,
            [MSP_FORMAT_HYB] = msp__cpu_hyb_spmv,
        },
    .spmv_prec =
        {
            [MSP_FORMAT_CSR] = msp__cpu_csr_prec_spmv,
            [MSP_FORMAT_COO] = msp__cpu_coo_prec_spmv,
            [MSP_FORMAT_ELL] = msp__cpu_ell_prec_spmv,
            [MSP_FORMAT_HLL] = msp__cpu_hll_prec_spmv,
            [MSP_FORMAT_DIA] = msp__cpu_dia_prec_spmv,
            [MSP_FORMAT_HDIA] = msp__cpu_hdia_prec_spmv,
            [MSP_FORMAT_HYB] = msp__cpu_hyb_prec_spmv,
        },
    .vector_decode = msp__cpu_vector_decode,
    .vector_encode = msp__cpu_vector_encode,
    .dot = msp__cpu_dot,
    .nrm2 = msp__cpu_nrm2,
    .nrm1 = msp__cpu_nrm1,
    .axpby = msp__cpu_axpby,
    .scale = msp__cpu_scale,
    .copy = msp__cpu_copy,
    .fill = msp__cpu_fill,
};

const msp__backend *msp__backend_cpu(void) {
  return &cpu_backend;
}
