// backend.c: the CPU (OpenMP) backend's dispatch table.
#include "internal.h"

msp_status msp__cpu_dot(msp_context, msp_vector, msp_vector, double *);
msp_status msp__cpu_nrm2(msp_context, msp_vector, double *);
msp_status msp__cpu_nrm1(msp_context, msp_vector, double *);
msp_status msp__cpu_axpby(msp_context, double, msp_vector, double, msp_vector);
msp_status msp__cpu_scale(msp_context, double, msp_vector);
msp_status msp__cpu_copy(msp_context, msp_vector, msp_vector);
msp_status msp__cpu_fill(msp_context, msp_vector, double);

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
};

const msp__backend *msp__backend_cpu(void) {
  return &cpu_backend;
}
