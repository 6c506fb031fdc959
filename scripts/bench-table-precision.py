#!/usr/bin/env python3
"""bench-table-precision.py BENCH.csv [MORE.csv ...]: the README's storage-precision table
from mixsparse-bench's CSV (runs with --precisions / --vector-precisions).

Per matrix, variant (format, CSR kernel) and vector precision of x and y: the time in each storage
precision of the values, the speedup over the same variant with f64 values and f64 x, y in the
same run, and the target t(P) <= t(f64) * bytes(P) / bytes(f64) / 0.9 (bytes by the
library's byte model: segments read, scales, padding, x and y in their precision) shown as
met / not met; 'slower' marks a time above t(f64). A second table sets our AUTO and CSR (rule's
kernel) rows beside their cuSPARSE peer (the fastest cuSPARSE variant in the same storage
precision: f64, f32, and CSR with f16 / bf16 values)."""
import collections
import csv
import math
import sys


def num(r, k):
    try:
        v = float(r.get(k, ''))
    except ValueError:
        return None
    return v if v > 0 else None


def main(paths):
    rows = []
    for p in paths:
        with open(p, newline='') as f:
            rows += list(csv.DictReader(f))
    ours = [r for r in rows if r['variant'].startswith('ours:')]
    # (matrix, variant, vector precision) -> {precision: row}; precision columns in first-seen order
    table = collections.OrderedDict()
    precs = []
    for r in ours:
        vp = r.get('vector_precision') or 'f64'
        table.setdefault((r['matrix'], r['variant'], vp), {})[r['precision']] = r
        if r['precision'] not in precs:
            precs.append(r['precision'])
    ref = {(m, v): c['f64'] for (m, v, vp), c in table.items()
           if vp == 'f64' and 'f64' in c and c['f64']['status'] == 'ok'}

    print('| matrix | variant | x, y | ' + ' | '.join(precs) + ' |')
    print('|---|---|---|' + '---:|' * len(precs))
    met = total = slower = 0
    for (m, v, vp), cells in table.items():
        base = ref.get((m, v))
        out = []
        for p in precs:
            r = cells.get(p)
            if r is None:
                out.append('')
                continue
            t = num(r, 'ms')
            if r['status'] not in ('ok', 'wrong') or t is None:
                out.append(r['status'])
                continue
            cell = '%.4f' % t
            if r['status'] == 'wrong':
                cell += ' WRONG'
            elif base is not None and (p != 'f64' or vp != 'f64'):
                tb, bb, b = num(base, 'ms'), num(base, 'bytes'), num(r, 'bytes')
                if tb and bb and b:
                    ok = t <= tb * b / bb / 0.9
                    total += 1
                    met += ok
                    slower += t > tb
                    cell += ' (%.2fx, %s%s)' % (tb / t, 'met' if ok else 'not met',
                                                 ', slower' if t > tb else '')
            out.append(cell)
        print('| %s | %s | %s | %s |' % (m, v[5:], vp, ' | '.join(out)))
    print()
    print('- cells: ms (speedup over f64 values with f64 x, y; target t(P) <= t(f64) bytes(P) / '
          'bytes(f64) / 0.9): met in %d of %d; slower than f64 in %d' % (met, total, slower))

    peers = [r for r in ours if r['variant'] in ('ours:auto', 'ours:csr-auto') and
             num(r, 'speedup_vs_peer') and r['status'] == 'ok']
    if peers:
        print()
        print('| matrix | variant | precision | x, y | ms | peer | peer ms | t(peer) / t(ours) |')
        print('|---|---|---|---|---:|---|---:|---:|')
        logs = collections.defaultdict(list)
        for r in peers:
            x = num(r, 'speedup_vs_peer')
            logs[(r['variant'], r['precision'], r.get('vector_precision', 'f64'))].append(math.log(x))
            print('| %s | %s | %s | %s | %.4f | %s | %.4f | %.2f |' % (
                r['matrix'], r['variant'][5:], r['precision'], r.get('vector_precision', 'f64'),
                float(r['ms']), r['peer'], float(r['peer_ms']), x))
        print()
        for (v, p, vp), ls in logs.items():
            print('- %s, %s values, x, y %s: geometric mean %.3f over %d matrices against the '
                  'cuSPARSE peer' % (v[5:], p, vp, math.exp(sum(ls) / len(ls)), len(ls)))
    return 0


if __name__ == '__main__':
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
