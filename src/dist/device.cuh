// device.cuh: what the two translation units of CUDA ranks' device transport share: the
// distributed context's and a matrix's device state, NCCL's error check, and the functions each
// file gives the other. device.cu: the context, the matrix's buffers, the product and PageRank's
// q; device_reduce.cu: the reductions over NCCL and this rank's parts of them.
#ifndef MSP_DIST_DEVICE_CUH
#define MSP_DIST_DEVICE_CUH

// (MPI's C interface only: no C++ bindings in this translation unit)
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include "access.cuh"
#include "basis.cuh"
#include "dist.h"

#ifdef MSP_HAVE_NCCL
#include <nccl.h>
#endif

#include <stdio.h>
#include <string.h>

// Products whose device times are read back later (the ring of timing events).
#define RING 16

// Values of one reduction the buffers hold at first (DCGS2 at restart 255 needs 512); a larger
// one grows them, agreed by every rank.
#define RED_VALUES 512

typedef struct {
  cudaStream_t comm; // the communication stream
  int device, size;
  double *h_max; // pinned: this rank's largest |w_i| of a fixed-point column on the host
  // The NCCL reductions: this rank's values and status (red_cap + 1), every rank's
  // (size x (red_cap + 1)), the combined results and statuses (red_cap + size) on the device
  // and pinned (h_out), and the host values staged for their upload (h_in, red_cap).
  double *d_send, *d_all, *d_out, *h_out, *h_in;
  int red_cap;
  double *d_loc;          // 2: this rank's 2-norm and whether its first pass gave it (nrm2_local)
  cudaEvent_t red0, red1; // a reduction's start and end on the compute stream (its device time)
#ifdef MSP_HAVE_NCCL
  ncclComm_t nccl; // NULL: no communicator
#endif
} dev_ctx;

// The CUDA backend's DCGS2 projection with its sums left on the device (basis_dcgs2.cu). Weak:
// against a backend without it the projection's values come from the host (the backend's
// basis_dcgs2_project) and go through the same NCCL reduction.
extern "C" __attribute__((weak)) msp_status msp__cuda_basis_dcgs2_sums(msp_context ctx,
                                                                       const msp__basis *V, int j,
                                                                       msp_vector w,
                                                                       const double **out);
// The CUDA backend's fixed-point column over the ranks (basis.cu): this rank's max |w_i| left on
// the device, and the column stored with the scale of every rank's maximum.
extern "C" msp_status msp__cuda_basis_absmax_dev(msp_context ctx, const msp__basis *V, msp_vector w,
                                                 const double **dv);
extern "C" msp_status msp__cuda_basis_store_scaled(msp_context ctx, msp__basis *V, int j,
                                                   msp_vector w, double scale);
// The backend's reductions and PageRank's update with their results left on the device (blas1.cu,
// pagerank.cu), weak as the one above: without them those values come from the host.
extern "C" __attribute__((weak)) msp_status msp__cuda_dot_dev(msp_context ctx, msp_vector x,
                                                              msp_vector y, const double **out);
extern "C" __attribute__((weak)) msp_status msp__cuda_nrm1_dev(msp_context ctx, msp_vector x,
                                                               const double **out);
extern "C" __attribute__((weak)) msp_status msp__cuda_nrm2_dev(msp_context ctx, msp_vector x,
                                                               const double **out);
extern "C" __attribute__((weak)) msp_status msp__cuda_pr_step_dev(msp_context ctx,
                                                                  const msp__prgraph *g,
                                                                  const msp__pr_step *a,
                                                                  const double **out);

typedef struct {
  int32_t *d_sidx;        // the rank's rows of the entries sent (ns)
  int32_t *d_brow;        // the boundary rows (Ao's rows in y)
  void *d_sbuf;           // the entries sent, ns * 8 bytes at most
  void *h_sbuf, *h_rbuf;  // pinned: the entries sent and received (host transport)
  cudaEvent_t ev_x, ev_c; // gathered; copied down (host transport)
  cudaEvent_t t0[RING], ta[RING], th[RING], t1[RING]; // product start, own part done, halo in, end
  int pending[RING];
  int64_t seq;
} dev_mat;

#ifdef MSP_HAVE_NCCL
static inline msp_status nccl_status(ncclResult_t r, const char *call) {
  return msp__error(MSP_ERR_DEVICE, "NCCL: %s failed: %s", call, ncclGetErrorString(r));
}
#define NCCL_TRY(call)                                                                             \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      st = nccl_status(r_, #call);                                                                 \
      goto exit;                                                                                   \
    }                                                                                              \
  } while (0)
#endif

// ---- shared by device.cu (the context, the product, PageRank) and device_reduce.cu
// ---------------- This rank gives NCCL up after a failure st (device.cu); returns st.
msp_status msp__dev_give_up(msp_dist d, msp_status st);
// Wait for ev, watching for another rank's failure notice where NCCL is in use (device.cu).
msp_status msp__dev_wait(msp_dist d, cudaEvent_t ev);
// The reduction buffers for cap values, and their release (device.cu).
msp_status msp__dev_red_buffers(dev_ctx *c, int cap);
void msp__dev_red_release(dev_ctx *c);

// The reductions over NCCL and this rank's parts of them on the device (device_reduce.cu), as
// msp__dist_devops takes them (dist.h).
msp_status msp__dev_reduce(msp_dist d, const double *v, const double *dv, int m, msp_status lst,
                           int mode, double *out, int *codes, double *seconds);
msp_status msp__dev_warm(msp_dist d);
msp_status msp__dev_dcgs2_sums(msp_context ctx, const msp__basis *V, int j, msp_vector w,
                               const double **dv);
msp_status msp__dev_absmax(msp_context ctx, const msp__basis *V, msp_vector w, double *m);
msp_status msp__dev_dot_dev(msp_context ctx, msp_vector x, msp_vector y, const double **dv);
msp_status msp__dev_nrm1_dev(msp_context ctx, msp_vector x, const double **dv);
msp_status msp__dev_nrm2_dev(msp_context ctx, msp_vector x, const double **dv);
msp_status msp__dev_pr_step_dev(msp_context ctx, const msp__prgraph *lg, const msp__pr_step *a,
                                const double **dv);

#endif
