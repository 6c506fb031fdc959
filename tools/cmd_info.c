// cmd_info.c: `mixsparse info`: statistics, the format and kernel chosen and why, footprints.
#include "cmd.h"
#include "common.h"

#include <string.h>

static void print_stats_text(const msp_matrix_stats *s) {
  printf("rows            %lld\n", (long long)s->rows);
  printf("cols            %lld\n", (long long)s->cols);
  printf("nnz             %lld\n", (long long)s->nnz);
  printf("row length      min %lld  max %lld  mean %.6g  std %.6g\n", (long long)s->row_min,
         (long long)s->row_max, s->row_mean, s->row_std);
  printf("row cv          %.6g\n", s->row_cv);
  printf("skewness        %.6g  (max / mean row length)\n", s->skewness);
  printf("empty rows      %lld\n", (long long)s->empty_rows);
  printf("diagonals       %lld  (bandwidth %lld: lower %lld, upper %lld)\n",
         (long long)s->diagonals, (long long)s->bandwidth, (long long)s->lower_bandwidth,
         (long long)s->upper_bandwidth);
  printf("ell fill        %.6g  (padded slots / nnz)\n", s->ell_fill);
  printf("dia fill        %.6g\n", s->dia_fill);
  printf("|a_ij|          mean %.6g  std %.6g\n", s->abs_mean, s->abs_std);
}

static void add_stats_json(json *j, const msp_matrix_stats *s) {
  json_int(j, "rows", s->rows);
  json_int(j, "cols", s->cols);
  json_int(j, "nnz", s->nnz);
  json_int(j, "row_min", s->row_min);
  json_int(j, "row_max", s->row_max);
  json_number(j, "row_mean", s->row_mean);
  json_number(j, "row_std", s->row_std);
  json_number(j, "row_cv", s->row_cv);
  json_number(j, "skewness", s->skewness);
  json_int(j, "empty_rows", s->empty_rows);
  json_int(j, "diagonals", s->diagonals);
  json_int(j, "bandwidth", s->bandwidth);
  json_number(j, "ell_fill", s->ell_fill);
  json_number(j, "dia_fill", s->dia_fill);
  json_number(j, "abs_mean", s->abs_mean);
  json_number(j, "abs_std", s->abs_std);
}

static const char *info_help =
    "usage: mixsparse info FILE [--json] [--max-fill F] [--allow-nonfinite]\n"
    "  Print the matrix statistics, the format and kernel mixsparse would choose and why,\n"
    "  and the footprint of every storage format (refused when padding exceeds F x CSR).\n"
    "  FILE is a Matrix Market file (.mtx or .mtx.gz) or gen:SPEC for a built-in matrix:\n"
    "    laplace2d:N          2D 5-point Laplacian on an N x N grid\n"
    "    stencil27:N          3D 27-point operator, coefficients varying in space (N^3 rows)\n"
    "    poisson3d:N          3D 7-point Poisson operator (N^3 rows, symmetric positive definite)\n"
    "    convdiff3d:N[:PECLET] 3D convection-diffusion, upwinded (nonsymmetric; PECLET 100)\n"
    "    random:ROWS:PER_ROW[:SEED]      uniform random columns\n"
    "    rmat:SCALE:EDGE_FACTOR[:SEED]   R-MAT power-law graph of 2^SCALE nodes\n"
    "    banded:ROWS:WIDTH               a band of WIDTH diagonals\n"
    "    powerlaw:ROWS:MEAN[:SEED]       power-law row lengths of mean MEAN\n"
    "  Every command takes --threads N (host threads; default: the CPUs free of other work).\n";

int cmd_info(int argc, char **argv) {
  options o;
  options_init(&o);
  int rc = parse_options(argc, argv, OPT_JSON | OPT_MAX_FILL | OPT_ALLOW_NONFINITE, 1, &o);
  if (rc) return rc;
  if (o.help) {
    fputs(info_help, stdout);
    return EXIT_OK;
  }
  msp_context ctx = NULL;
  msp_matrix A = NULL, B = NULL;
  json *j = NULL;
  rc = EXIT_FAILED;
  msp_status st = context_create(MSP_BACKEND_CPU, 0, &ctx);
  if (st != MSP_SUCCESS) {
    fail(st, "context");
    goto exit;
  }
  if ((st = load_matrix(ctx, &o, &A)) != MSP_SUCCESS) {
    fail(st, o.file);
    goto exit;
  }
  msp_matrix_stats s;
  if ((st = msp_matrix_analyze(A, &s)) != MSP_SUCCESS) {
    fail(st, o.file);
    goto exit;
  }
  char kreason[256];
  msp_kernel k = msp_choose_kernel(&s, kreason, sizeof kreason);
  // The automatic format choice: convert with AUTO on the CPU (cheap) and report it.
  msp_convert_options co = msp_convert_options_default();
  co.format = MSP_FORMAT_AUTO;
  co.max_fill = o.max_fill;
  msp_status cst = msp_matrix_convert(ctx, A, &co, &B);
  const char *fmt = cst == MSP_SUCCESS ? msp_format_name(msp_matrix_format(B)) : "csr";
  char freason[1024];
  snprintf(freason, sizeof freason, "%s",
           cst == MSP_SUCCESS ? msp_matrix_choice_reason(B) : msp_last_error());
  msp_matrix_destroy(&B);
  size_t bytes[MSP_FORMAT_COUNT];
  msp_status fst[MSP_FORMAT_COUNT];
  for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
    co = msp_convert_options_default();
    co.format = (msp_format)f;
    co.max_fill = o.max_fill;
    fst[f] = msp_matrix_convert(ctx, A, &co, &B);
    bytes[f] = fst[f] == MSP_SUCCESS ? msp_matrix_bytes(B) : 0;
    msp_matrix_destroy(&B);
  }
  if (o.json) {
    if (!(j = json_new())) {
      fail(MSP_ERR_OUT_OF_MEMORY, "JSON output");
      goto exit;
    }
    json_string(j, "file", o.file);
    add_stats_json(j, &s);
    json_string(j, "kernel", msp_kernel_name(k));
    json_string(j, "kernel_reason", kreason);
    json_string(j, "format", fmt);
    json_string(j, "format_reason", freason);
    json_object(j, "footprint_bytes"); // null: the format refused the matrix
    for (int f = 0; f < MSP_FORMAT_COUNT; f++)
      if (fst[f] == MSP_SUCCESS)
        json_int(j, msp_format_name((msp_format)f), (long long)bytes[f]);
      else
        json_null(j, msp_format_name((msp_format)f));
    json_end(j);
    const int prc = json_finish(j, NULL);
    j = NULL;
    if (prc != EXIT_OK) goto exit;
  } else {
    printf("file            %s\n", o.file);
    print_stats_text(&s);
    printf("csr kernel      %s: %s\n", msp_kernel_name(k), kreason);
    printf("format          %s: %s\n", fmt, freason);
    printf("footprint       ");
    for (int f = 0; f < MSP_FORMAT_COUNT; f++) {
      if (f) printf("                ");
      if (fst[f] == MSP_SUCCESS)
        printf("%-10s %zu bytes\n", msp_format_name((msp_format)f), bytes[f]);
      else
        printf("%-10s n/a (%s)\n", msp_format_name((msp_format)f), msp_status_name(fst[f]));
    }
  }
  rc = EXIT_OK;
exit:
  json_free(j);
  msp_matrix_destroy(&B);
  msp_matrix_destroy(&A);
  msp_context_destroy(&ctx);
  return rc;
}
