// bench_dump.h: what the C benchmarks that hand their matrices to a Python peer share
// (mixsparse-bench-pagerank with bench/pagerank_cupy.py, mixsparse-bench-solve with
// bench/gmres_cupy.py): the file tag of a matrix spec and the binary CSR dump the peers read.
#ifndef MSP_BENCH_DUMP_H
#define MSP_BENCH_DUMP_H

#include "mixsparse.h"

#include <stddef.h>

// A file-name tag for a spec: gen:rmat:22:16 -> rmat_22_16, dir/web-NotreDame.mtx.gz ->
// web-NotreDame (':' and '.' become '_', a trailing _mtx... is cut). The Python peers make the
// same tag (tag_of in bench/gmres_cupy.py; pagerank_cupy.py takes the tags on its command line).
void bench_tag(const char *spec, char *tag, size_t n);

// Write A's CSR as DIR/TAG.rowptr (int64), DIR/TAG.colind (int32), with `values` also
// DIR/TAG.val (float64), and DIR/TAG.txt ("n nnz"), little-endian as in memory. 0 on success,
// -1 when a file or an allocation fails.
int bench_dump_csr(msp_matrix A, const char *dir, const char *tag, int values);

#endif
