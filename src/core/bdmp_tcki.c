// bdmp_tcki.c: BDMP-TCKI: the tile layout built from the tiling and precision selection of
// bdmp.c (tile formats, CSR-like block rows), its GPU chunking, bytes, decoding and conversion
// back to CSR, and the format's record.
#include "bdmp.h"

#include "formats.h"
#include "precision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void msp__bdmp_tcki_free(void *fmt) {
  msp__bdmp_tcki *T = fmt;
  if (T == NULL) return;
  MSP_FREE(T->tile_ptr);
  MSP_FREE(T->tile_col);
  MSP_FREE(T->tile_fmt);
  MSP_FREE(T->tile_width);
  MSP_FREE(T->eoff);
  MSP_FREE(T->voff);
  MSP_FREE(T->idx);
  MSP_FREE(T->val32);
  MSP_FREE(T->val64);
  msp__free(T);
}

// ---- TCKI --------------------------------------------------------------------------------------
// The kinds of the block rows (bdmp.h), by the bytes a product reads on the GPU. A block row's
// tiles cost the tile chunks' records, tile columns and slabs with their padding
// (msp__tcki_slab_bytes) and, split over several chunks, its partial sums and run; its entries in
// the CSR-like part, which the GPU reads as PBP, cost what msp__tcki_rows_cost counts. The matrix
// takes the least of: every block row tiles, every block row CSR-like, or each block row its
// cheaper kind (msp__tcki_choice).
int msp__bdmp_keep_tiles = 0;
int msp__bdmp_host_build = 0;

msp_status msp__bdmp_build_tcki(msp_matrix B, const msp__bdmp_ent *ent, const msp__bdmp_tile *tiles,
                                int64_t ntiles, const int64_t *tile_ptr, int64_t nbrows,
                                const uint8_t *is64, const msp__bdmp_info *info,
                                msp__bdmp_tcki **out) {
  msp_status st = MSP_SUCCESS;
  msp__bdmp_tcki *T = NULL;
  msp__tcki_tile_plan *plan = NULL;
  int64_t *segs = NULL, *src = NULL, *rlen64 = NULL;
  uint8_t *e64 = NULL;
  int64_t *cost = NULL;
  int bad = 0;
  const int64_t rows = B->rows;
  MSP_TRY(MSP_ALLOC_ZERO(T, 1, "BDMP-TCKI header"));
  T->info = *info;
  T->nbrows = nbrows;
  MSP_TRY(MSP_ALLOC(plan, ntiles, "BDMP-TCKI tile plans"));
  // segs[2 br], segs[2 br + 1]: the block row's fp64 and fp32 segments, both 0 when it keeps
  // its tiles
  MSP_TRY(MSP_ALLOC_ZERO(segs, 2 * nbrows, "BDMP-TCKI block row kinds"));
  MSP_TRY(MSP_ALLOC_ZERO(rlen64, rows, "BDMP-TCKI fp64 entries per row"));
  MSP_TRY(MSP_ALLOC(e64, B->nnz, "BDMP-TCKI entry precisions"));
  MSP_TRY(MSP_ALLOC(cost, nbrows > 0 ? 2 * nbrows : 1, "BDMP-TCKI block row costs"));
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < ntiles; t++) {
    int len[MSP_BDMP_TILE] = {0};
    for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n; e++) {
      len[(ent[e].key >> 4) & 15]++;
    }
    plan[t] = msp__tcki_plan_tile(len, tiles[t].n);
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t br = 0; br < nbrows; br++) {
    int64_t tb = 0, nch = 0, n[2] = {0, 0}, len[2][MSP_BDMP_TILE], ns[2];
    msp__tcki_slab chunk;
    memset(len, 0, sizeof len);
    memset(&chunk, 0, sizeof chunk);
    for (int64_t t = tile_ptr[br]; t < tile_ptr[br + 1]; t++) {
      int tl[MSP_BDMP_TILE] = {0};
      n[!is64[t]] += tiles[t].n;
      for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n; e++)
        tl[(ent[e].key >> 4) & 15]++;
      for (int r = 0; r < MSP_BDMP_TILE; r++)
        len[!is64[t]][r] += tl[r];
      if (!msp__tcki_slab_add(&chunk, !is64[t], tl)) {
        tb += msp__tcki_slab_bytes(&chunk);
        nch++;
        memset(&chunk, 0, sizeof chunk);
        msp__tcki_slab_add(&chunk, !is64[t], tl);
      }
    }
    tb += chunk.n > 0 ? msp__tcki_slab_bytes(&chunk) : 0;
    nch += chunk.n > 0;
    // a split block row: its run, and 16 partial sums per chunk written and read
    if (nch > 1) tb += 3 * 8 + nch * MSP_BDMP_TILE * 8 * 2;
    // per precision: segments of at most about MSP_BDMP_SEG_ENTRIES entries and at most
    // MSP_BDMP_SEG_ROW of any one row
    for (int p = 0; p < 2; p++) {
      int64_t maxlen = 0;
      for (int r = 0; r < MSP_BDMP_TILE; r++)
        maxlen = len[p][r] > maxlen ? len[p][r] : maxlen;
      ns[p] = msp__tcki_nsegs(n[p], maxlen);
    }
    cost[2 * br] = msp__tcki_tiles_cost(tb);
    cost[2 * br + 1] = msp__tcki_rows_cost(n[0], n[1]);
    segs[2 * br] = n[0] + n[1] > 0 ? ns[0] : 0;
    segs[2 * br + 1] = n[0] + n[1] > 0 ? ns[1] : 0;
  }
  { // integer sums: the same in any order (the device's too)
    int64_t tiles_only = 0, rows_only = 0, mixed = 0, ncsr = 0, ntile = 0;
    for (int64_t br = 0; br < nbrows; br++) {
      if (segs[2 * br] + segs[2 * br + 1] == 0) continue; // empty: no entries either way
      tiles_only += cost[2 * br];
      rows_only += cost[2 * br + 1];
      const int csr = cost[2 * br] > cost[2 * br + 1];
      mixed += cost[2 * br + csr];
      ncsr += csr;
      ntile += !csr;
    }
    const int choice =
        msp__tcki_choice(msp__bdmp_keep_tiles, rows, tiles_only, rows_only, mixed, ncsr, ntile);
    for (int64_t br = 0; br < nbrows; br++) {
      if (choice == 0 || (choice == 1 && cost[2 * br] <= cost[2 * br + 1]))
        segs[2 * br] = segs[2 * br + 1] = 0;
    }
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t br = 0; br < nbrows; br++) {
    if (segs[2 * br] + segs[2 * br + 1] == 0) continue;
    for (int64_t t = tile_ptr[br]; t < tile_ptr[br + 1]; t++) {
      for (int64_t e = tiles[t].start; e < tiles[t].start + tiles[t].n; e++) {
        e64[ent[e].k] = is64[t];
        if (is64[t]) rlen64[tiles[t].br * MSP_BDMP_TILE + ((ent[e].key >> 4) & 15)]++;
      }
    }
  }
  // The stored entries: the tiles of tile block rows, the segments of CSR-like ones; src[o] is
  // the tile that stored entry o holds, -1 for a segment.
  MSP_TRY(MSP_ALLOC(T->tile_ptr, nbrows + 1, "BDMP-TCKI tile pointers"));
  T->tile_ptr[0] = 0;
  for (int64_t br = 0; br < nbrows; br++) {
    const int64_t ns = segs[2 * br] + segs[2 * br + 1];
    T->tile_ptr[br + 1] = T->tile_ptr[br] + (ns > 0 ? ns : tile_ptr[br + 1] - tile_ptr[br]);
  }
  const int64_t nout = T->tile_ptr[nbrows];
  T->ntiles = nout;
  MSP_TRY(MSP_ALLOC(T->tile_col, nout, "BDMP-TCKI tile columns"));
  MSP_TRY(MSP_ALLOC(T->tile_fmt, nout, "BDMP-TCKI tile formats"));
  MSP_TRY(MSP_ALLOC(T->tile_width, nout, "BDMP-TCKI tile widths"));
  MSP_TRY(MSP_ALLOC(T->eoff, nout + 1, "BDMP-TCKI entry offsets"));
  MSP_TRY(MSP_ALLOC(T->voff, nout, "BDMP-TCKI value offsets"));
  MSP_TRY(MSP_ALLOC(src, nout, "BDMP-TCKI stored tiles"));
  T->eoff[0] = 0;
  for (int64_t br = 0; br < nbrows; br++) {
    int64_t o = T->tile_ptr[br];
    if (segs[2 * br] + segs[2 * br + 1] == 0) {
      for (int64_t t = tile_ptr[br]; t < tile_ptr[br + 1]; t++, o++) {
        src[o] = t;
        T->tile_col[o] = tiles[t].bc;
        T->tile_fmt[o] = (uint8_t)(plan[t].fmt | (is64[t] ? MSP__TILE_F64 : 0));
        T->tile_width[o] = plan[t].width;
        T->eoff[o + 1] = T->eoff[o] + plan[t].bytes;
        if (is64[t]) {
          T->voff[o] = T->n64;
          T->n64 += plan[t].vals;
        } else {
          T->voff[o] = T->n32;
          T->n32 += plan[t].vals;
        }
        T->fmt_count[plan[t].fmt]++;
      }
      continue;
    }
    T->csr_brows++;
    for (int p = 0; p < 2; p++) { // fp64 segments, then fp32
      const int64_t ns = segs[2 * br + p];
      for (int64_t s = 0; s < ns; s++, o++) {
        int64_t n = 0;
        for (int r = 0; r < MSP_BDMP_TILE; r++) {
          const int64_t i = br * MSP_BDMP_TILE + r;
          if (i >= rows) break;
          const int64_t len = p == 0 ? rlen64[i] : B->rowptr[i + 1] - B->rowptr[i] - rlen64[i];
          n += msp__tcki_seg_share(len, s, ns);
        }
        src[o] = -1;
        T->tile_col[o] = 0;
        T->tile_fmt[o] = (uint8_t)(MSP__TILE_ROWS | (p == 0 ? MSP__TILE_F64 : 0));
        T->tile_width[o] = 0;
        T->eoff[o + 1] = msp__bdmp_seg_at(T->eoff[o]) + 2 * MSP_BDMP_TILE + 4 * n;
        if (p == 0) {
          T->voff[o] = T->n64;
          T->n64 += n;
        } else {
          T->voff[o] = T->n32;
          T->n32 += n;
        }
        T->csr_nnz += n;
        T->nsegs++;
      }
    }
  }
  MSP_TRY(MSP_ALLOC(T->idx, T->eoff[nout], "BDMP-TCKI indices"));
  MSP_TRY(MSP_ALLOC(T->val32, T->n32, "BDMP-TCKI fp32 values"));
  MSP_TRY(MSP_ALLOC(T->val64, T->n64, "BDMP-TCKI fp64 values"));
  // CSR-like block rows: each precision's segments get their row ends, then each row's entries
  // of that precision are dealt to the segments in column order.
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t br = 0; br < nbrows; br++) {
    if (segs[2 * br] + segs[2 * br + 1] == 0) continue;
    int64_t o0 = T->tile_ptr[br];
    for (int p = 0; p < 2; p++) {
      const int64_t ns = segs[2 * br + p];
      for (int64_t s = 0; s < ns; s++) {
        const int64_t o = o0 + s;
        memset(T->idx + T->eoff[o], 0, (size_t)(msp__bdmp_seg_at(T->eoff[o]) - T->eoff[o]));
        uint16_t *ends = (uint16_t *)(void *)(T->idx + msp__bdmp_seg_at(T->eoff[o]));
        int64_t q = 0;
        for (int r = 0; r < MSP_BDMP_TILE; r++) {
          const int64_t i = br * MSP_BDMP_TILE + r;
          if (i < rows) {
            const int64_t len = p == 0 ? rlen64[i] : B->rowptr[i + 1] - B->rowptr[i] - rlen64[i];
            q += msp__tcki_seg_share(len, s, ns);
          }
          ends[r] = (uint16_t)q;
        }
      }
      for (int r = 0; r < MSP_BDMP_TILE; r++) {
        const int64_t i = br * MSP_BDMP_TILE + r;
        if (i >= rows) break;
        const int64_t len = p == 0 ? rlen64[i] : B->rowptr[i + 1] - B->rowptr[i] - rlen64[i];
        if (len == 0) continue;
        int64_t s = 0, lo = 0, hi = len / ns, c = 0;
        for (int64_t k = B->rowptr[i]; k < B->rowptr[i + 1]; k++) {
          if (e64[k] != (p == 0)) continue;
          while (c >= hi) {
            s++;
            lo = hi;
            hi = len * (s + 1) / ns;
          }
          const int64_t o = o0 + s;
          const uint16_t *ends = msp__bdmp_seg_ends(T, o);
          int32_t *cols =
              (int32_t *)(void *)(T->idx + msp__bdmp_seg_at(T->eoff[o]) + 2 * MSP_BDMP_TILE);
          const int64_t pos = (r > 0 ? ends[r - 1] : 0) + (c - lo);
          cols[pos] = B->colind[k];
          if (p == 0)
            T->val64[T->voff[o] + pos] = B->val[k];
          else
            T->val32[T->voff[o] + pos] = msp_f32_from_double(B->val[k]);
          c++;
        }
      }
      o0 += ns;
    }
  }
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t o = 0; o < nout; o++) {
    const int64_t t = src[o];
    if (t < 0) continue; // a segment, filled above
    uint8_t *ix = T->idx + T->eoff[o];
    float *v32 = T->val32 + T->voff[o];
    double *v64 = T->val64 + T->voff[o];
    int f64 = is64[t] != 0;
    int w = plan[t].width;
    const msp__bdmp_ent *te = ent + tiles[t].start;
    int64_t n = tiles[t].n;
#define PUT_VAL(pos, a)                                                                            \
  do {                                                                                             \
    if (f64)                                                                                       \
      v64[pos] = (a);                                                                              \
    else                                                                                           \
      v32[pos] = msp_f32_from_double(a);                                                           \
  } while (0)
    if (plan[t].fmt == MSP__TILE_COO) {
      for (int64_t e = 0; e < n; e++) {
        ix[e] = (uint8_t)(te[e].key & 0xff);
        PUT_VAL(e, B->val[te[e].k]);
      }
      continue;
    }
    // ELL slots (ELL: all entries; HYB: the first w of each row), padding flagged
    int rowpos[MSP_BDMP_TILE] = {0};
    int64_t cut = 0; // entries of te that went to the ELL part, counted per row below
    if (plan[t].fmt == MSP__TILE_ELL || plan[t].fmt == MSP__TILE_HYB) {
      for (int64_t s = 0; s < (int64_t)MSP_BDMP_TILE * w; s++) {
        ix[s] = MSP__TILE_PAD;
        PUT_VAL(s, 0.0);
      }
      for (int64_t e = 0; e < n; e++) {
        int r = (int)((te[e].key >> 4) & 15), c = (int)(te[e].key & 15);
        if (rowpos[r] < w) {
          int64_t s = (int64_t)rowpos[r] * MSP_BDMP_TILE + r;
          ix[s] = (uint8_t)c;
          PUT_VAL(s, B->val[te[e].k]);
          rowpos[r]++;
          cut++;
        }
      }
      if (plan[t].fmt == MSP__TILE_ELL) continue;
    }
    // CSR (or HYB's CSR part): 17 row pointers, then the remaining entries in row order
    int64_t base = (int64_t)MSP_BDMP_TILE * w; // byte and value position of the CSR part
    uint8_t *rp = ix + base;
    uint8_t *cx = rp + MSP_BDMP_TILE + 1;
    int64_t rest = n - cut;
    if (rest > 255) bad = 1; // cannot happen: such a tile is full, hence ELL
    int cnt[MSP_BDMP_TILE] = {0};
    int seen[MSP_BDMP_TILE] = {0};
    for (int64_t e = 0; e < n; e++) {
      int r = (int)((te[e].key >> 4) & 15);
      if (seen[r]++ >= w) cnt[r]++;
    }
    rp[0] = 0;
    for (int r = 0; r < MSP_BDMP_TILE; r++)
      rp[r + 1] = (uint8_t)(rp[r] + cnt[r]);
    memset(seen, 0, sizeof seen);
    int64_t q = 0;
    for (int64_t e = 0; e < n; e++) {
      int r = (int)((te[e].key >> 4) & 15);
      if (seen[r]++ < w) continue;
      cx[q] = (uint8_t)(te[e].key & 0xff);
      PUT_VAL(base + q, B->val[te[e].k]);
      q++;
    }
#undef PUT_VAL
  }
  if (bad) {
    st = msp__error(MSP_ERR_INTERNAL, "BDMP-TCKI: a CSR tile part holds more than 255 entries");
    goto exit;
  }
  msp__bdmp_tcki_device(T, &T->dev, NULL);
  *out = T;
  T = NULL;
exit:
  MSP_FREE(plan);
  MSP_FREE(segs);
  MSP_FREE(src);
  MSP_FREE(rlen64);
  MSP_FREE(e64);
  MSP_FREE(cost);
  msp__bdmp_tcki_free(T);
  return st;
}

// Tile t's entries per row (a tile, not a segment).
static void tile_row_lengths(const msp__bdmp_tcki *T, int64_t t, int len[MSP_BDMP_TILE]) {
  uint8_t rr[256], cc[256];
  double vv[256];
  const int n = msp__bdmp_tile_decode(T, t, rr, cc, vv);
  memset(len, 0, MSP_BDMP_TILE * sizeof(int));
  for (int e = 0; e < n; e++)
    len[rr[e]]++;
}

// One tile chunk's slab: tiles t0 .. t1, widths w[2] (msp__tcki_slab), into dev at the chunk's
// offsets. Row r's fp64 entries take its first slots, its fp32 entries the next.
static void fill_slab(const msp__bdmp_tcki *T, int64_t t0, int64_t t1, const int w[2],
                      const msp__tcki_chunk *c, const msp__tcki_dev *dev) {
  uint8_t rr[256], cc[256];
  double vv[256];
  int k[MSP_BDMP_TILE];
  const int64_t s64 = (int64_t)MSP_BDMP_TILE * w[0], s32 = (int64_t)MSP_BDMP_TILE * w[1];
  uint8_t *ix = dev->idx + c->ioff;
  memset(ix, MSP__TCKI_PAD, (size_t)(s64 + s32));
  memset(k, 0, sizeof k);
  for (int64_t s = 0; s < s64; s++)
    dev->val64[c->v64off + s] = 0.0;
  for (int64_t s = 0; s < s32; s++)
    dev->val32[c->v32off + s] = 0.0f;
  for (int p = 0; p < 2; p++) {
    for (int64_t t = t0; t < t1; t++) {
      if (((T->tile_fmt[t] & MSP__TILE_F64) ? 0 : 1) != p) continue;
      const int n = msp__bdmp_tile_decode(T, t, rr, cc, vv);
      for (int e = 0; e < n; e++) {
        const int64_t kk = k[rr[e]]++, slot = kk * MSP_BDMP_TILE + rr[e];
        ix[slot] = (uint8_t)((t - t0) << 4 | cc[e]);
        if (kk < w[0])
          dev->val64[c->v64off + slot] = vv[e]; // an fp32 tile's value widened: exact
        else
          dev->val32[c->v32off + slot - s64] = (float)vv[e]; // an fp32 tile's value: exact
      }
    }
  }
  for (int64_t t = t0; t < t1; t++)
    dev->tcol[c->first + (t - t0)] = T->tile_col[t];
}

// Record one tile chunk (sizes always; the record and its slab when dev is set).
static void add_chunk(const msp__bdmp_tcki *T, int64_t br, int64_t t0, int64_t t1, const int w[2],
                      msp__tcki_dev_size *z, const msp__tcki_dev *dev) {
  if (dev) {
    msp__tcki_chunk *c = &dev->chunk[z->nchunks];
    c->br = (int32_t)br;
    c->part = -1;
    c->first = (int32_t)z->ntcol;
    c->packed = (uint32_t)(t1 - t0) | (uint32_t)w[0] << 8 | (uint32_t)w[1] << 16;
    c->ioff = z->nidx;
    c->v64off = z->n64;
    c->v32off = z->n32;
    fill_slab(T, t0, t1, w, c, dev);
  }
  z->nchunks++;
  z->ntcol += t1 - t0;
  z->nidx += (int64_t)MSP_BDMP_TILE * (w[0] + w[1]);
  z->n64 += (int64_t)MSP_BDMP_TILE * w[0];
  z->n32 += (int64_t)MSP_BDMP_TILE * w[1];
}

void msp__bdmp_tcki_device(const msp__bdmp_tcki *T, msp__tcki_dev_size *size,
                           const msp__tcki_dev *dev) {
  msp__tcki_dev_size z;
  memset(&z, 0, sizeof z);
  for (int64_t br = 0; br < T->nbrows; br++) {
    const int64_t first = z.nchunks, tend = T->tile_ptr[br + 1];
    int64_t t = T->tile_ptr[br];
    if (t == tend && T->csr_brows > 0) continue; // an empty block row: the CSR kernel writes it
    if (msp__bdmp_brow_csr(T, br)) {
      z.rows_brows++;
      for (; t < tend; t++) {
        const int64_t n = msp__bdmp_seg_ends(T, t)[MSP_BDMP_TILE - 1];
        z.rows_nnz += n;
        z.rows_n64 += (T->tile_fmt[t] & MSP__TILE_F64) ? n : 0;
      }
      continue;
    }
    do {
      int64_t t1 = t;
      msp__tcki_slab c;
      memset(&c, 0, sizeof c);
      for (; t1 < tend; t1++) {
        int len[MSP_BDMP_TILE];
        tile_row_lengths(T, t1, len);
        if (!msp__tcki_slab_add(&c, (T->tile_fmt[t1] & MSP__TILE_F64) ? 0 : 1, len)) break;
      }
      add_chunk(T, br, t, t1, c.w, &z, dev);
      t = t1;
    } while (t < tend);
    if (z.nchunks - first > 1) { // split: every chunk of the block row gets a part slot
      if (dev) {
        for (int64_t c = first; c < z.nchunks; c++)
          dev->chunk[c].part = (int32_t)(z.nparts + (c - first));
        dev->runs[3 * z.nsplit] = br;
        dev->runs[3 * z.nsplit + 1] = z.nparts;
        dev->runs[3 * z.nsplit + 2] = z.nchunks - first;
      }
      z.nsplit++;
      z.nparts += z.nchunks - first;
    }
  }
  *size = z;
}

size_t msp__bdmp_tcki_bytes(const msp_matrix A) {
  // The arrays a product reads (bdmp.h): the tile part's chunk records, tile columns, index
  // bytes, values with the slabs' padding, the runs of split block rows and their partial sums
  // (16 doubles per chunk, written and read); the CSR-like part as PBP (row pointers over every
  // row, columns, a word per 32 entries, values), where there is one.
  const msp__tcki_dev_size *z = &((const msp__bdmp_tcki *)A->fmt)->dev;
  int64_t b = z->nchunks * (int64_t)sizeof(msp__tcki_chunk) + z->ntcol * 4 + z->nidx + z->n32 * 4 +
              z->n64 * 8 + z->nsplit * 3 * 8 + z->nparts * MSP_BDMP_TILE * 8 * 2;
  if (z->rows_brows > 0)
    b += (A->rows + 1) * 8 + z->rows_nnz * 4 +
         (z->rows_nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD * 8 + (z->rows_nnz - z->rows_n64) * 4 +
         z->rows_n64 * 8;
  return (size_t)b;
}

// Decode tile t into (row, column, value) in row-then-column order; padding dropped. Returns the
// number of entries.
int msp__bdmp_tile_decode(const msp__bdmp_tcki *T, int64_t t, uint8_t *rr, uint8_t *cc,
                          double *vv) {
  const uint8_t *ix = T->idx + T->eoff[t];
  int fmt = T->tile_fmt[t] & 3, f64 = (T->tile_fmt[t] & MSP__TILE_F64) != 0;
  int64_t nb = T->eoff[t + 1] - T->eoff[t];
  const float *v32 = T->val32 + T->voff[t];
  const double *v64 = T->val64 + T->voff[t];
#define GET_VAL(pos) (f64 ? v64[pos] : (double)v32[pos])
  int n = 0;
  if (fmt == MSP__TILE_COO) {
    for (int64_t e = 0; e < nb; e++) {
      rr[n] = ix[e] >> 4;
      cc[n] = ix[e] & 15;
      vv[n++] = GET_VAL(e);
    }
    return n;
  }
  int w = fmt == MSP__TILE_CSR ? 0 : T->tile_width[t];
  const uint8_t *rp = ix + (int64_t)MSP_BDMP_TILE * w;
  const uint8_t *cx = rp + MSP_BDMP_TILE + 1;
  for (int r = 0; r < MSP_BDMP_TILE; r++) {
    for (int k = 0; k < w; k++) {
      int64_t s = (int64_t)k * MSP_BDMP_TILE + r;
      if (ix[s] & MSP__TILE_PAD) continue;
      rr[n] = (uint8_t)r;
      cc[n] = ix[s] & 15;
      vv[n++] = GET_VAL(s);
    }
    if (fmt == MSP__TILE_ELL) continue;
    for (int q = rp[r]; q < rp[r + 1]; q++) {
      rr[n] = (uint8_t)r;
      cc[n] = cx[q] & 15;
      vv[n++] = GET_VAL((int64_t)MSP_BDMP_TILE * w + q);
    }
  }
#undef GET_VAL
  return n;
}

// Row r of a CSR-like block row: segments [s, s1) of one precision, from the entry of segment s
// at position q on (a cursor moves to the next segment at the end of the row's share).
typedef struct {
  int64_t s, s1, q;
} seg_cursor;

static void seg_cursor_settle(const msp__bdmp_tcki *T, seg_cursor *c, int r) {
  while (c->s < c->s1 && c->q >= msp__bdmp_seg_ends(T, c->s)[r]) {
    if (++c->s < c->s1) c->q = r > 0 ? msp__bdmp_seg_ends(T, c->s)[r - 1] : 0;
  }
}

static double seg_value(const msp__bdmp_tcki *T, int64_t s, int64_t q) {
  return (T->tile_fmt[s] & MSP__TILE_F64) ? T->val64[T->voff[s] + q]
                                          : (double)T->val32[T->voff[s] + q];
}

// Block row br (CSR-like) into the CSR at pos[r]: per row, its fp64 and fp32 entries (each in
// column order over their segments) merged by column; is64 (may be NULL): 1 for an fp64 entry.
static void seg_brow_to_csr(const msp__bdmp_tcki *T, int64_t br, int64_t rows, int64_t *pos,
                            int32_t *colind, double *val, uint8_t *is64) {
  const int64_t o0 = T->tile_ptr[br], o1 = T->tile_ptr[br + 1];
  int64_t m = o0;
  while (m < o1 && (T->tile_fmt[m] & MSP__TILE_F64))
    m++;
  for (int r = 0; r < MSP_BDMP_TILE && br * MSP_BDMP_TILE + r < rows; r++) {
    seg_cursor a = {o0, m, 0}, b = {m, o1, 0};
    if (a.s < a.s1) a.q = r > 0 ? msp__bdmp_seg_ends(T, a.s)[r - 1] : 0;
    if (b.s < b.s1) b.q = r > 0 ? msp__bdmp_seg_ends(T, b.s)[r - 1] : 0;
    for (;;) {
      seg_cursor_settle(T, &a, r);
      seg_cursor_settle(T, &b, r);
      if (a.s >= a.s1 && b.s >= b.s1) break;
      seg_cursor *c = &a;
      if (a.s >= a.s1 ||
          (b.s < b.s1 && msp__bdmp_seg_cols(T, b.s)[b.q] < msp__bdmp_seg_cols(T, a.s)[a.q]))
        c = &b;
      colind[pos[r]] = msp__bdmp_seg_cols(T, c->s)[c->q];
      if (is64) is64[pos[r]] = c == &a;
      val[pos[r]++] = seg_value(T, c->s, c->q);
      c->q++;
    }
  }
}

msp_status msp__bdmp_tcki_to_csr(const msp_matrix A, int64_t *rowptr, int32_t *colind,
                                 double *val) {
  int64_t rows = A->rows;
  const msp__bdmp_tcki *T = (const msp__bdmp_tcki *)A->fmt;
  if (!colind) {
    memset(rowptr, 0, (size_t)(rows + 1) * sizeof *rowptr);
    for (int64_t br = 0; br < T->nbrows; br++) {
      for (int64_t t = T->tile_ptr[br]; t < T->tile_ptr[br + 1]; t++) {
        if (T->tile_fmt[t] & MSP__TILE_ROWS) {
          const uint16_t *ends = msp__bdmp_seg_ends(T, t);
          for (int r = 0; r < MSP_BDMP_TILE && br * MSP_BDMP_TILE + r < rows; r++)
            rowptr[br * MSP_BDMP_TILE + r + 1] += ends[r] - (r > 0 ? ends[r - 1] : 0);
          continue;
        }
        uint8_t rr[256], cc[256];
        double vv[256];
        int n = msp__bdmp_tile_decode(T, t, rr, cc, vv);
        for (int e = 0; e < n; e++)
          rowptr[br * MSP_BDMP_TILE + rr[e] + 1]++;
      }
    }
    for (int64_t i = 0; i < rows; i++)
      rowptr[i + 1] += rowptr[i];
    return MSP_SUCCESS;
  }
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t br = 0; br < T->nbrows; br++) {
    int64_t pos[MSP_BDMP_TILE];
    for (int r = 0; r < MSP_BDMP_TILE; r++) {
      int64_t i = br * MSP_BDMP_TILE + r;
      pos[r] = i < rows ? rowptr[i] : 0;
    }
    if (msp__bdmp_brow_csr(T, br)) {
      seg_brow_to_csr(T, br, rows, pos, colind, val, NULL);
      continue;
    }
    // tiles in ascending block column, rows' entries in ascending column: appending keeps
    // every row's columns sorted
    for (int64_t t = T->tile_ptr[br]; t < T->tile_ptr[br + 1]; t++) {
      uint8_t rr[256], cc[256];
      double vv[256];
      int n = msp__bdmp_tile_decode(T, t, rr, cc, vv);
      for (int e = 0; e < n; e++) {
        colind[pos[rr[e]]] = (int32_t)((int64_t)T->tile_col[t] * MSP_BDMP_TILE + cc[e]);
        val[pos[rr[e]]++] = vv[e];
      }
    }
  }
  return MSP_SUCCESS;
}

void msp__bdmp_pbp_clear(msp__bdmp_pbp *P) {
  MSP_FREE(P->rowptr);
  MSP_FREE(P->colind);
  MSP_FREE(P->meta);
  MSP_FREE(P->v32);
  MSP_FREE(P->v64);
}

msp_status msp__bdmp_tcki_rows(const msp__bdmp_tcki *T, int64_t rows, msp__bdmp_pbp *P) {
  msp_status st = MSP_SUCCESS;
  double *val = NULL;
  uint8_t *is64 = NULL;
  memset(P, 0, sizeof *P);
  MSP_TRY(MSP_ALLOC_ZERO(P->rowptr, rows + 1, "TCKI CSR-like part: row pointers"));
  for (int64_t br = 0; br < T->nbrows; br++) {
    if (!msp__bdmp_brow_csr(T, br)) continue;
    for (int64_t t = T->tile_ptr[br]; t < T->tile_ptr[br + 1]; t++) {
      const uint16_t *ends = msp__bdmp_seg_ends(T, t);
      for (int r = 0; r < MSP_BDMP_TILE && br * MSP_BDMP_TILE + r < rows; r++)
        P->rowptr[br * MSP_BDMP_TILE + r + 1] += ends[r] - (r > 0 ? ends[r - 1] : 0);
    }
  }
  for (int64_t i = 0; i < rows; i++)
    P->rowptr[i + 1] += P->rowptr[i];
  const int64_t nnz = P->rowptr[rows], words = (nnz + MSP__PBP_WORD - 1) / MSP__PBP_WORD;
  MSP_TRY(MSP_ALLOC(P->colind, nnz > 0 ? nnz : 1, "TCKI CSR-like part: columns"));
  MSP_TRY(MSP_ALLOC(val, nnz > 0 ? nnz : 1, "TCKI CSR-like part: values"));
  MSP_TRY(MSP_ALLOC(is64, nnz > 0 ? nnz : 1, "TCKI CSR-like part: precisions"));
  MSP_TRY(MSP_ALLOC_ZERO(P->meta, words > 0 ? 2 * words : 1, "TCKI CSR-like part: words"));
  for (int64_t br = 0; br < T->nbrows; br++) {
    if (!msp__bdmp_brow_csr(T, br)) continue;
    int64_t pos[MSP_BDMP_TILE];
    for (int r = 0; r < MSP_BDMP_TILE; r++) {
      const int64_t i = br * MSP_BDMP_TILE + r;
      pos[r] = i < rows ? P->rowptr[i] : 0;
    }
    seg_brow_to_csr(T, br, rows, pos, P->colind, val, is64);
  }
  int64_t n64 = 0;
  for (int64_t k = 0; k < nnz; k++) {
    if (k % MSP__PBP_WORD == 0) P->meta[2 * (k / MSP__PBP_WORD) + 1] = (uint32_t)n64;
    if (is64[k]) P->meta[2 * (k / MSP__PBP_WORD)] |= 1u << (k % MSP__PBP_WORD);
    n64 += is64[k];
  }
  if (n64 > (int64_t)UINT32_MAX) { // the words' counts are 32-bit
    st = msp__error(MSP_ERR_NOT_SUPPORTED, "TCKI CSR-like part: %lld fp64 entries exceed 2^32 - 1",
                    (long long)n64);
    goto exit;
  }
  P->info.nnz64 = n64;
  P->info.nnz32 = nnz - n64;
  MSP_TRY(MSP_ALLOC(P->v64, n64 > 0 ? n64 : 1, "TCKI CSR-like part: fp64 values"));
  MSP_TRY(MSP_ALLOC(P->v32, nnz - n64 > 0 ? nnz - n64 : 1, "TCKI CSR-like part: fp32 values"));
  for (int64_t k = 0, a = 0, b = 0; k < nnz; k++) {
    if (is64[k])
      P->v64[a++] = val[k];
    else
      P->v32[b++] = (float)val[k]; // an fp32 segment's value: exact
  }
exit:
  msp__free(val);
  msp__free(is64);
  if (st != MSP_SUCCESS) msp__bdmp_pbp_clear(P);
  return st;
}

// ---- the record
// ----------------------------------------------------------------------------------
static msp_status tcki_plan(const msp_matrix A, msp_convert_options *o, double *bytes, char *what,
                            size_t n) {
  return msp__bdmp_plan(A, o, bytes, what, n, MSP_FORMAT_BDMP_TCKI);
}
static msp_status tcki_build(const msp_matrix A, const msp_convert_options *o, void **fmt) {
  return msp__bdmp_build(A, MSP_FORMAT_BDMP_TCKI, o, fmt);
}

const msp__format_ops msp__fmt_bdmp_tcki = {
    .format = MSP_FORMAT_BDMP_TCKI,
    .tag = "bdmp-tcki",
    .has_fmt = 1,
    .max_fill_checked = 0,
    .plan = tcki_plan,
    .build = tcki_build,
    .bytes = msp__bdmp_tcki_bytes,
    .to_csr = msp__bdmp_tcki_to_csr,
    .free = msp__bdmp_tcki_free,
    .values = NULL,
    .f64_only = MSP__BDMP_F64_ONLY,
};
