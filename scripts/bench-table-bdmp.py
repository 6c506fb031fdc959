#!/usr/bin/env python3
"""bench-table-bdmp.py BENCH.csv: the issue-5 table (storage precision and BDMP) for the README:
per matrix and variant, speedup over cuSPARSE CSR fp64 (same run), accuracy ratio (share of rows
with >= 7 significant digits against the CPU fp64 result), footprint against CSR fp64, fp32 share,
guaranteed bound (digits mode) and conversion time in SpMV-equivalents."""
import csv, sys

rows = [r for r in csv.DictReader(open(sys.argv[1])) if r['variant'].startswith('bdmp:')]
print('| matrix | nnz | variant | storage | ms | x cuSPARSE CSR f64 | accuracy ratio | footprint / CSR f64 | fp32 share | bound | prep (SpMVs) |')
print('|---|---:|---|---|---:|---:|---:|---:|---:|---|---:|')
for r in rows:
    if r['status'] != 'ok':
        continue
    f = lambda k, fmt='%.3g': (fmt % float(r[k])) if r.get(k) not in (None, '', '-1') else '-'
    print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
        r['matrix'], r['nnz'], r['variant'][5:], r['precision'], f('ms', '%.4f'),
        f('speedup_cusparse_csr_f64', '%.2f'), f('acc_ratio', '%.3f'),
        f('footprint_vs_csr_f64', '%.2f'), f('fp32_share', '%.2f'), f('bound', '%.2g'),
        f('prep_spmv', '%.0f')))
