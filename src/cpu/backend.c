// backend.c: the CPU (OpenMP) backend's dispatch table.
#include "internal.h"

msp_status msp__cpu_dot(msp_context, msp_vector, msp_vector, double *);
msp_status msp__cpu_nrm2(msp_context, msp_vector, double *);
msp_status msp__cpu_nrm1(msp_context, msp_vector, double *);
msp_status msp__cpu_axpby(msp_context, double, msp_vector, double, msp_vector);
msp_status msp__cpu_scale(msp_context, double, msp_vector);
msp_status msp__cpu_copy(msp_context, msp_vector, msp_vector);
msp_status msp__cpu_fill(msp_context, msp_vector, double);
msp_status msp__cpu_basis_alloc(msp_context, int64_t, int, msp_precision, msp__basis **);
void msp__cpu_basis_free(msp_context, msp__basis *);
msp_status msp__cpu_basis_store(msp_context, msp__basis *, int, msp_vector);
msp_status msp__cpu_basis_project(msp_context, const msp__basis *, int, int, msp_vector, double *,
                                  double *);
msp_status msp__cpu_basis_subtract(msp_context, const msp__basis *, int, int, const double *,
                                   msp_vector, double *, double *);
msp_status msp__cpu_basis_combine(msp_context, const msp__basis *, int, const double *, msp_vector);
msp_status msp__cpu_basis_dcgs2_project(msp_context, const msp__basis *, int, msp_vector, double *);
msp_status msp__cpu_basis_dcgs2_update(msp_context, msp__basis *, int, const double *, double,
                                       const double *, msp_vector, int);
msp_status msp__cpu_pmul(msp_context, msp_vector, msp_vector, msp_vector);
msp_status msp__cpu_pr_upload(msp_context, msp__prgraph *);
void msp__cpu_pr_free(msp_context, msp__prgraph *);
msp_status msp__cpu_pr_step(msp_context, const msp__prgraph *, const msp__pr_step *, double[3]);

// Every format has a CPU kernel (src/cpu/<ident>.c) for every storage precision of the matrix,
// x and y: the slots come from MSP_FORMAT_LIST.
#define MSP__CPU_SPMV_SLOT_(name, tag, ident) [MSP_FORMAT_##name] = msp__cpu_##ident##_spmv,

static const msp__backend cpu_backend = {
    .name = "cpu",
    .kind = MSP_BACKEND_CPU,
    .spmv = {MSP_FORMAT_LIST(MSP__CPU_SPMV_SLOT_)},
    .dot = msp__cpu_dot,
    .nrm2 = msp__cpu_nrm2,
    .nrm1 = msp__cpu_nrm1,
    .axpby = msp__cpu_axpby,
    .scale = msp__cpu_scale,
    .copy = msp__cpu_copy,
    .fill = msp__cpu_fill,
    .basis_alloc = msp__cpu_basis_alloc,
    .basis_free = msp__cpu_basis_free,
    .basis_store = msp__cpu_basis_store,
    .basis_project = msp__cpu_basis_project,
    .basis_subtract = msp__cpu_basis_subtract,
    .basis_combine = msp__cpu_basis_combine,
    .basis_dcgs2_project = msp__cpu_basis_dcgs2_project,
    .basis_dcgs2_update = msp__cpu_basis_dcgs2_update,
    .pmul = msp__cpu_pmul,
    .pr_upload = msp__cpu_pr_upload,
    .pr_free = msp__cpu_pr_free,
    .pr_step = msp__cpu_pr_step,
};

const msp__backend *msp__backend_cpu(void) {
  return &cpu_backend;
}
