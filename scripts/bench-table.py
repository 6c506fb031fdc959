#!/usr/bin/env python3
"""bench-table.py BENCH.csv: Markdown tables for the README from mixsparse-bench's CSV (fp64).

Speedups are t(cuSPARSE) / t(ours), per matrix, in the same run:
  - 'CSR x' compares our CSR with the automatic kernel against the fastest cuSPARSE CSR/COO
    variant (CSR default, CSR_ALG2, COO ALG1, COO ALG2): the CSR comparison;
  - 'AUTO x' and 'TUNE x' compare our automatic format choice and the tuned one against the
    fastest of every cuSPARSE variant, sliced ELL included: the format comparison.
"""
import csv, math, sys, collections

rows = list(csv.DictReader(open(sys.argv[1])))
M = collections.OrderedDict()
for r in rows:
    if r.get('precision') != 'f64' or r.get('status') != 'ok' or r.get('vector_precision', 'f64') != 'f64':
        continue
    M.setdefault(r['matrix'], {})[r['variant']] = r

def t(v, k):
    return float(v[k]['ms']) if k in v else None

def gm(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float('nan')

print('| matrix | kind | nnz | fastest cuSPARSE (ms) | CSR kernel | CSR x | AUTO format | AUTO x | AUTO % read bw | TUNE x | best of ours |')
print('|---|---|---:|---|---|---:|---|---:|---:|---:|---|')
groups = collections.defaultdict(lambda: collections.defaultdict(list))
wins = collections.Counter()
for m, v in M.items():
    any_row = next(iter(v.values()))
    kind, nnz = any_row['kind'], int(any_row['nnz'])
    cu_all = {k: float(r['ms']) for k, r in v.items() if k.startswith('cusparse:')}
    cu_csrcoo = {k: x for k, x in cu_all.items() if ':csr' in k or ':coo' in k}
    if not cu_all or 'ours:csr-auto' not in v:
        continue
    fk = min(cu_all, key=cu_all.get)
    fc = min(cu_csrcoo.values()) if cu_csrcoo else None
    csr = t(v, 'ours:csr-auto')
    auto = t(v, 'ours:auto')
    tune = t(v, 'ours:tune')
    ours = {k: float(r['ms']) for k, r in v.items() if k.startswith('ours:') and k not in ('ours:auto', 'ours:tune', 'ours:csr-auto')}
    best = min(ours, key=ours.get) if ours else None
    wins[best] += 1
    x_csr = fc / csr if fc and csr else None
    x_auto = cu_all[fk] / auto if auto else None
    x_tune = cu_all[fk] / tune if tune else None
    big = 'generated' if kind == 'generated' else ('real>1e5' if nnz > 1e5 else 'real')
    groups[big]['csr'].append(x_csr)
    groups[big]['auto'].append(x_auto)
    groups[big]['tune'].append(x_tune)
    if tune and best:
        groups[big]['tune_vs_best'].append(ours[best] / tune)
    kern = v['ours:csr-auto'].get('choice', '').split(':')[0]
    fmt = v['ours:auto'].get('choice', '').split(':')[0] if auto else '-'
    pct = v['ours:auto']['pct_read_bw'] if auto else '-'
    fmtx = lambda x: '%.2f' % x if x else '-'
    print('| %s | %s | %d | %s %.4f | %s | %s | %s | %s | %s | %s | %s %.2fx |' % (
        m, kind, nnz, fk.split(':')[1], cu_all[fk], kern, fmtx(x_csr), fmt, fmtx(x_auto), pct,
        fmtx(x_tune), best.split(':')[1] if best else '-', cu_all[fk] / ours[best] if best else 0))
print()
for g, d in groups.items():
    print('- %s (%d matrices): CSR-auto geomean %.3f (min %.2f); AUTO geomean %.3f (min %.2f); TUNE geomean %.3f; TUNE within 5%% of our best fixed variant on %d of %d' % (
        g, len(d['csr']), gm(d['csr']), min(x for x in d['csr'] if x), gm(d['auto']),
        min(x for x in d['auto'] if x), gm(d['tune']),
        sum(1 for x in d['tune_vs_best'] if x >= 0.95), len(d['tune_vs_best'])))
print('- fastest of our variants per matrix: ' + ', '.join('%s %d' % (k.split(':')[1], n) for k, n in wins.most_common()))
