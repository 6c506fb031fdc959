#!/usr/bin/env python3
"""bench-table-bdmp.py BENCH.csv: the BDMP table (storage precision and BDMP) for the README:
per matrix and variant, speedup over cuSPARSE CSR fp64 (same run), accuracy ratio (share of rows
with >= 7 significant digits against the CPU fp64 result), footprint against CSR fp64, fp32 share,
guaranteed bound (digits mode) and conversion time in SpMV-equivalents (end to end, and the device
time of a conversion on the device: BDMP-PBP); then the BDMP summary:
per matrix the speedups of PBP and TCKI over cuSPARSE CSR fp64, PBP's time against our CSR fp64,
the percentage of the measured read bandwidth, and `auto --digits 7` against AUTO in fp64 (the
ours:auto row), with geometric means."""
import csv, math, sys

allrows = list(csv.DictReader(open(sys.argv[1])))
rows = [r for r in allrows if r['variant'].startswith('bdmp:')]
print('| matrix | nnz | variant | storage | ms | x cuSPARSE CSR f64 | accuracy ratio | footprint / CSR f64 | fp32 share | bound | prep (SpMVs) | device prep (SpMVs) |')
print('|---|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|')
for r in rows:
    if r['status'] != 'ok':
        continue
    f = lambda k, fmt='%.3g': (fmt % float(r[k])) if r.get(k) not in (None, '', '-1') else '-'
    print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
        r['matrix'], r['nnz'], r['variant'][5:], r['precision'], f('ms', '%.4f'),
        f('speedup_cusparse_csr_f64', '%.2f'), f('acc_ratio', '%.3f'),
        f('footprint_vs_csr_f64', '%.2f'), f('fp32_share', '%.2f'), f('bound', '%.2g'),
        f('prep_spmv', '%.0f'), f('prep_device_spmv', '%.1f')))


def num(r, k):
    try:
        v = float(r[k])
    except (KeyError, TypeError, ValueError):
        return None
    return v if v > 0 else None


def geo(v):
    v = [x for x in v if x]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def get(m, variant, prec=None):
    for r in allrows:
        if r['matrix'] == m and r['variant'] == variant and (prec is None or r['precision'] == prec) \
                and r['status'] == 'ok':
            return r
    return None


mats = []
for r in rows:
    if r['matrix'] not in mats:
        mats.append(r['matrix'])
print()
print('| matrix | PBP x cuSPARSE | PBP-d7 x cuSPARSE | TCKI x cuSPARSE | TCKI-d7 x cuSPARSE | PBP / our CSR f64 time | PBP %bw | TCKI %bw | PBP device prep (SpMVs) | PBP-d7 device prep | TCKI device prep | TCKI-d7 device prep | AUTO f64 ms | auto-d7 ms (choice) | auto-d7 / AUTO f64 |')
print('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|')
f = lambda v, fmt='%.2f': fmt % v if v else '-'
cols = {k: [] for k in ('pbp', 'pbpd', 'tcki', 'tckid', 'ad')}
for m in mats:
    pbp, pbpd = get(m, 'bdmp:pbp'), get(m, 'bdmp:pbp-d7')
    tcki, tckid = get(m, 'bdmp:tcki'), get(m, 'bdmp:tcki-d7')
    csr = get(m, 'bdmp:csr', 'f64')
    auto, ad = get(m, 'ours:auto', 'f64'), get(m, 'bdmp:auto-d7')
    x = lambda r: num(r, 'speedup_cusparse_csr_f64') if r else None
    rel = num(pbp, 'ms') / num(csr, 'ms') if pbp and csr and num(pbp, 'ms') and num(csr, 'ms') else None
    sp = num(auto, 'ms') / num(ad, 'ms') if auto and ad and num(auto, 'ms') and num(ad, 'ms') else None
    for k, v in (('pbp', x(pbp)), ('pbpd', x(pbpd)), ('tcki', x(tcki)), ('tckid', x(tckid)), ('ad', sp)):
        cols[k].append(v)
    print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
        m, f(x(pbp)), f(x(pbpd)), f(x(tcki)), f(x(tckid)), f(rel),
        f(num(pbp, 'pct_read_bw') if pbp else None, '%.0f'), f(num(tcki, 'pct_read_bw') if tcki else None, '%.0f'),
        f(num(pbp, 'prep_device_spmv') if pbp else None, '%.1f'),
        f(num(pbpd, 'prep_device_spmv') if pbpd else None, '%.1f'),
        f(num(tcki, 'prep_device_spmv') if tcki else None, '%.1f'),
        f(num(tckid, 'prep_device_spmv') if tckid else None, '%.1f'),
        f(num(auto, 'ms') if auto else None, '%.4f'),
        ('%.4f (%s)' % (num(ad, 'ms'), ad['choice'])) if ad and num(ad, 'ms') else '-', f(sp)))
print('| geometric mean | %s | %s | %s | %s | | | | | | | | | | %s |' % (
    f(geo(cols['pbp'])), f(geo(cols['pbpd'])), f(geo(cols['tcki'])), f(geo(cols['tckid'])), f(geo(cols['ad']))))
