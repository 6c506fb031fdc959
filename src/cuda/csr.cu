// csr.cu: CSR on the GPU: upload, and the scalar, vector and merge-path kernels for y = aAx + by.
//
// Device arrays of a CSR matrix (msp__cuda_matrix slots), one layout for every storage precision:
//   d[0] rowptr   int64[rows + 1]
//   d[1] colind   int32[nnz]
//   d[2] val      the values as stored: double[nnz] for f64 (A->val); otherwise the encoded
//                 array A->pval->data (src/common/precision.h layout, msp__prec_bytes each)
//   d[3] tile_row int64[tiles + 1]: merge-path row coordinate where each tile starts (and ends)
//   d[4] tile_nz  int64[tiles + 1]: merge-path nonzero coordinate where each tile starts
//   d[5] carry    double[2 * tiles]: carry[b], tile b's partial sum of the row it leaves
//                 unfinished; head[b] = carry[tiles + b], alpha * (tile b's part of the row it
//                 finishes) + beta * y_old when that row began in an earlier tile (see the
//                 fix-ups: such a row is stored into y once, complete, so a reduced-precision y
//                 is rounded and range-checked once)
//   d[6] runs     int64[3 * nruns]: fix-up runs of at most FIXUP_LONG tiles (first tile, tile
//                 count, row): rows that continue across tiles, see csr_merge_fixup
//   d[7] scales   double[nscales]: fixed-point scales of the values (fx32, fx16 only)
//   d[8] long     int64[3 * nlong]: the runs of more than FIXUP_LONG tiles (very long rows)
//   d[9]  tile_run int32[tiles]: fused fix-up only: the run whose row tile k's carry belongs to,
//                 or -1 (see csr_merge_kernel's last-block epilogue)
//   d[10] run_row  int64[runs]: fused fix-up only: the row of each run
//   d[11] counter  unsigned[1]: fused fix-up only: blocks done in the current launch (0 between)
//   i64[11] merge-path items per thread (a tile is i64[11] * MERGE_THREADS items),
//   i64[0] vector group size G, i64[1] tiles, i64[2] nruns, i64[3] 1 where the mean row length
//   exceeds G, i64[4] 1 where at least half of the rows are longer than G (both: the vector
//   kernel's slots per step, csr.cuh vector_long_rows), i64[5] nlong, i64[7] fused run count
//   (> 0: the merge kernel applies the carries itself, no fix-up launches). The values' view
//   (precision, scales, CPMS banks and segments read) comes from A->pval at each product
//   (msp__fmt_values), as for the other formats.
// Each kernel is one template over the loader of the matrix values and the loader of x
// (src/cuda/access.cuh, reading through the accessors of src/common/precision.h), instantiated
// for every pair of MSP_PRECISION_LIST by two nested msp__prec_dispatch; arithmetic is fp64 and
// y is written through its store Y: ystore_f64 for an f64 y, else ystore, which rounds into y's
// precision (chosen at run time). Everything the merge-path kernel needs (tile coordinates,
// fix-up plan, carry scratch) is made here, once, so a product only enqueues kernels: no
// allocation, no host synchronisation.
//
// Fixed-point y (one scale per 32 rows, set from those rows' results): the scalar and vector
// kernels finish aligned blocks of 32 rows inside one CUDA block and set the scales in the same
// pass. The merge path does not (a block of 32 rows may straddle tiles): it writes an fp64 work
// vector, which msp__cuda_spmv_fixed_y (blas1.cu) then stores into y, a warp per block.
#include "csr.cuh"

#include <string.h>

// ---- upload ------------------------------------------------------------------------------------
// The CSR structure and the merge-path plan into m (every slot but the values'): shared by CSR
// in every storage precision and by BDMP-PBP. trow_in, tnz_in (host arrays of tiles + 1, may be
// NULL): the tiles' merge-path coordinates made elsewhere (the device conversion of
// bdmp_convert.cu), so that rowptr is read here only at the tiles' rows; longer_in >= 0: the rows
// longer than the vector group, counted elsewhere.
// Items per thread of the merge path: MERGE_IPT, halved (to 2 at least) while the tiles would
// not give every SM 4 blocks and the smaller tiles still fit the fused fix-up. The upload and
// BDMP's device conversion both take it from here, so that they make the same plan.
extern "C" int msp__cuda_csr_merge_ipt(msp_context ctx, int64_t rows, int64_t nnz) {
  const int64_t items = rows + nnz,
                sms = msp__cuda(ctx)->sm_count > 0 ? msp__cuda(ctx)->sm_count : 1;
  int ipt = MERGE_IPT;
  while (ipt > 2 && (items + ipt * MERGE_THREADS - 1) / (ipt * MERGE_THREADS) < 4 * sms &&
         (items + ipt / 2 * MERGE_THREADS - 1) / (ipt / 2 * MERGE_THREADS) <= MERGE_FUSE_TILES)
    ipt /= 2;
  return ipt;
}

extern "C" msp_status msp__cuda_csr_structure_planned(msp_context ctx, msp__cuda_matrix *m,
                                                      int64_t rows, int64_t nnz,
                                                      const int64_t *rowptr, const int32_t *colind,
                                                      const int64_t *trow_in, const int64_t *tnz_in,
                                                      int64_t longer_in) {
  msp_status st = MSP_SUCCESS;
  int64_t *trow = NULL, *tnz = NULL, *runs = NULL, *lruns = NULL, *rrow = NULL;
  int32_t *trun = NULL;
  // Coordinates made elsewhere (trow_in) are for the tiles of msp__cuda_csr_merge_ipt too.
  const int ipt = msp__cuda_csr_merge_ipt(ctx, rows, nnz);
  const int64_t items = rows + nnz;
  const int64_t tile = (int64_t)ipt * MERGE_THREADS;
  const int64_t tiles = (items + tile - 1) / tile;
  int64_t nruns = 0, nlong = 0, nfused = 0;

  if (tiles > INT32_MAX)
    return msp__error(MSP_ERR_NOT_SUPPORTED,
                      "csr upload: %lld rows + %lld nonzeros exceed the merge-path grid",
                      (long long)rows, (long long)nnz);
  if (!m->d[SLOT_ROWPTR]) { // filled already: a structure built on the device (PageRank's G^T)
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, SLOT_ROWPTR, rowptr, (size_t)(rows + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_COLIND, colind, (size_t)nnz * sizeof(int32_t)));
  }

  // Merge-path plan: tile coordinates, then the runs of tiles whose carry-out belongs to the
  // same row (a carry counts when the tile consumed at least one nonzero of that row).
  if (tiles > 0) {
    MSP_TRY(MSP_ALLOC(trow, tiles + 1, "csr merge tile rows"));
    MSP_TRY(MSP_ALLOC(tnz, tiles + 1, "csr merge tile nonzeros"));
    MSP_TRY(MSP_ALLOC(runs, 3 * tiles, "csr merge fix-up runs"));
    MSP_TRY(MSP_ALLOC(lruns, 3 * tiles, "csr merge long fix-up runs"));
    if (trow_in) {
      memcpy(trow, trow_in, (size_t)(tiles + 1) * sizeof *trow);
      memcpy(tnz, tnz_in, (size_t)(tiles + 1) * sizeof *tnz);
    } else {
      for (int64_t k = 0; k <= tiles; k++) {
        const int64_t dg = k * tile < items ? k * tile : items;
        msp__merge_search(dg, rowptr, rows, nnz, &trow[k], &tnz[k]);
      }
    }
    for (int64_t k = 0; k < tiles; k++) {
      const int64_t r = trow[k + 1], n0 = tnz[k], n1 = tnz[k + 1];
      if (r >= rows) continue;
      const int64_t from = rowptr[r] > n0 ? rowptr[r] : n0;
      if (n1 <= from) continue; // the tile holds no nonzero of its unfinished row
      if (nruns > 0 && runs[3 * (nruns - 1) + 2] == r &&
          runs[3 * (nruns - 1)] + runs[3 * (nruns - 1) + 1] == k) {
        runs[3 * (nruns - 1) + 1]++;
      } else {
        runs[3 * nruns] = k;
        runs[3 * nruns + 1] = 1;
        runs[3 * nruns + 2] = r;
        nruns++;
      }
    }
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, SLOT_TILE_ROW, trow, (size_t)(tiles + 1) * sizeof(int64_t)));
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_TILE_NZ, tnz, (size_t)(tiles + 1) * sizeof(int64_t)));
    // carry (tiles) and head (tiles): written by every product before they are read
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_CARRY, NULL, (size_t)(2 * tiles) * sizeof(double)));
    if (tiles <= MERGE_FUSE_TILES && nruns > 0) {
      // Fused fix-up: each tile's run id (or -1), each run's row, and the zeroed block counter.
      MSP_TRY(MSP_ALLOC(trun, tiles, "csr merge tile runs"));
      MSP_TRY(MSP_ALLOC(rrow, nruns, "csr merge run rows"));
      for (int64_t k = 0; k < tiles; k++)
        trun[k] = -1;
      for (int64_t q = 0; q < nruns; q++) {
        rrow[q] = runs[3 * q + 2];
        for (int64_t k = runs[3 * q]; k < runs[3 * q] + runs[3 * q + 1]; k++)
          trun[k] = (int32_t)q;
      }
      nfused = nruns;
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_TILE_RUN, trun, (size_t)tiles * sizeof(int32_t)));
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_RUN_ROW, rrow, (size_t)nfused * sizeof(int64_t)));
      MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_COUNTER, NULL, sizeof(unsigned)));
    }
    // Move the long runs to their own list (order kept in both).
    int64_t nshort = 0;
    for (int64_t q = 0; q < nruns; q++) {
      int64_t *dst = runs[3 * q + 1] > FIXUP_LONG ? lruns + 3 * nlong++ : runs + 3 * nshort++;
      if (dst != runs + 3 * q) memmove(dst, runs + 3 * q, 3 * sizeof(int64_t));
    }
    nruns = nshort;
    MSP_TRY(msp__cuda_matrix_put(ctx, m, SLOT_RUNS, runs, (size_t)(3 * nruns) * sizeof(int64_t)));
    MSP_TRY(
        msp__cuda_matrix_put(ctx, m, SLOT_LONG_RUNS, lruns, (size_t)(3 * nlong) * sizeof(int64_t)));
  }
  m->i64[0] = msp__vector_group(rows, nnz);
  { // long rows (csr.cuh vector_long_rows): the mean row length above the group, and at least
    // half of the rows longer than it
    int64_t longer = longer_in;
    if (longer < 0) {
      longer = 0;
      for (int64_t i = 0; i < rows; i++)
        longer += rowptr[i + 1] - rowptr[i] > m->i64[0];
    }
    m->i64[3] = (double)nnz > (double)rows * (double)m->i64[0];
    m->i64[4] = rows > 0 && 2 * longer >= rows;
  }
  m->i64[1] = tiles;
  m->i64[2] = nruns;
  m->i64[5] = nlong;
  m->i64[7] = nfused;
  m->i64[11] = ipt;
  // Copies from pageable memory are staged before cudaMemcpyAsync returns; waiting here anyway
  // keeps the host buffers freed below out of any doubt (uploads are not on the hot path).
  MSP_CUDA_TRY(cudaStreamSynchronize(msp__cuda(ctx)->stream));
exit:
  msp__free(trow);
  msp__free(tnz);
  msp__free(runs);
  msp__free(lruns);
  msp__free(trun);
  msp__free(rrow);
  return st;
}

extern "C" msp_status msp__cuda_csr_structure_upload(msp_context ctx, msp__cuda_matrix *m,
                                                     int64_t rows, int64_t nnz,
                                                     const int64_t *rowptr, const int32_t *colind) {
  return msp__cuda_csr_structure_planned(ctx, m, rows, nnz, rowptr, colind, NULL, NULL, -1);
}

// One upload for every storage precision: the CSR structure and merge-path plan, and the value
// array as stored (f64: A->val; otherwise A->pval, the same bytes as the CPU reads, with its
// fixed-point scales).
extern "C" msp_status msp__cuda_csr_upload(msp_context ctx, msp_matrix A) {
  msp_status st = MSP_SUCCESS;
  msp__cuda_matrix *m = NULL;
  if ((unsigned)A->precision >= MSP_PRECISION_COUNT ||
      (A->precision != MSP_PRECISION_F64 && (!A->pval || A->pval->n != A->nnz)))
    return msp__error(MSP_ERR_INTERNAL, "csr upload: %s values were not encoded before the upload",
                      msp_precision_name(A->precision) ? msp_precision_name(A->precision) : "?");
  MSP_TRY(msp__cuda_matrix_new(A, &m));
  MSP_TRY(msp__fmt_put_values(ctx, m, A, SLOT_VAL, SLOT_SCALES, A->val, A->nnz, NULL, 0));
  MSP_TRY(msp__cuda_csr_structure_upload(ctx, m, A->rows, A->nnz, A->rowptr, A->colind));
exit:
  return st;
}

// Every storage precision of A and of x through one launcher: the switch over MSP_PRECISION_LIST
// picks the values' instantiation (csr.cuh msp__cuda_csr_spmv_values, compiled in
// csr_values_*.cu), which switches over x's precision and y's store (msp__ystore_dispatch: a plain
// store for an f64 y, the rounding store of y's precision otherwise).
extern "C" msp_status msp__cuda_csr_spmv(msp_context ctx, double alpha, const msp_matrix A,
                                         msp_vector x, double beta, msp_vector y) {
  if (A->rows == 0) return MSP_SUCCESS;
  if (!A->dev)
    return msp__error(MSP_ERR_INTERNAL, "csr spmv (cuda): the matrix has no device data");
  const msp_kernel k = msp__cuda_csr_kernel(A);
  if (msp__cuda_csr_via_f64_y(k, y))
    return msp__cuda_spmv_fixed_y(ctx, alpha, A, x, beta, y, msp__cuda_csr_spmv);
  return msp__prec_dispatch(A->precision, [&](auto pa) {
    return msp__cuda_csr_spmv_values<decltype(pa)::value>(ctx, k, A, x, alpha, beta, y);
  });
}
