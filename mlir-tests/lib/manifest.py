#!/usr/bin/env python3
"""The lowered corpus's manifest (target/corpus/manifest.tsv, written by
`make corpus`): its one writer and its one reader.

One row per corpus program (per RUN line), tab-separated, '-' = empty,
under a header `#name<TAB>ll<TAB>...` (COLUMNS):
  name          file stem, plus .N for the N-th RUN line of a file with several
  ll            LLVM IR (for jit-harness); mlir: the LLVM dialect (for the runners)
  check_file    the file to FileCheck stdout against, with check_prefix
  entry, entry_result   the runner's -e and -entry-point-result
  env           space-separated VAR=VAL to set when running
  requires, xfail, unsupported   lit's directives (rules.py reads them)
  source        the corpus program; pipeline: its RUN line's pass pipeline
                when stage 1 has no other option (jit-harness --pipeline)

As a command (for bash scripts):
  manifest.py rows MANIFEST [NAME...] --runtime-kind KIND [--llvm-prefix P]
                   [--columns C,C...]
      prints, per program (only the NAMEs when given), a tab-separated line:
      its expectation on that runtime by rules.py (pass, xfail or
      unsupported; features: KIND-runtime and mlir-N, N the version of P,
      default $LLVM_PREFIX), the reason ('-' when none), then the columns
      asked for ('-' = empty).
"""
import argparse
import os
import sys

import rules
import toolchain

COLUMNS = ['name', 'll', 'check_file', 'check_prefix', 'entry',
           'entry_result', 'env', 'requires', 'xfail', 'unsupported',
           'source', 'mlir', 'pipeline']


def write(progs, out_dir):
    """Writes DIR/manifest.tsv for the programs that lowered (those with
    'll'); returns its path."""
    path = os.path.join(out_dir, 'manifest.tsv')
    with open(path + '.tmp', 'w') as f:
        f.write('#' + '\t'.join(COLUMNS) + '\n')
        for p in progs:
            if 'll' not in p:
                continue
            row = dict(p, env=' '.join(p['env']))
            f.write('\t'.join(row[c] if row[c] else '-' for c in COLUMNS) + '\n')
    os.replace(path + '.tmp', path)
    return path


# What every reader needs; the other columns read as '' when a manifest
# lacks them.
REQUIRED = ['name', 'll', 'check_file', 'check_prefix', 'entry', 'env',
            'requires', 'xfail', 'unsupported']


def read(path, required=REQUIRED):
    """The rows of a manifest as dicts by column name, '-' read as ''; env
    as a list of VAR=VAL. Columns are found by the header's names; a
    manifest without a `required` column is an error."""
    rows, cols = [], None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip('\n').split('\t')
            if cols is None:
                if not fields[0].startswith('#'):
                    raise ValueError('%s:%d: no header line (#name...)' % (path, n))
                cols = [c.lstrip('#') for c in fields]
                missing = [c for c in required if c not in cols]
                if missing:
                    raise ValueError('%s: no column %s (run make corpus again)'
                                     % (path, ', '.join(missing)))
                continue
            if not fields[0]:
                continue
            row = dict.fromkeys(COLUMNS, '')
            row.update((c, '' if v == '-' else v) for c, v in zip(cols, fields))
            row['env'] = row.get('env', '').split()
            rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description='Rows of the lowered corpus with their expectation.')
    sub = ap.add_subparsers(dest='cmd', required=True)
    r = sub.add_parser('rows')
    r.add_argument('manifest')
    r.add_argument('names', nargs='*')
    r.add_argument('--runtime-kind', required=True, choices=rules.KINDS)
    r.add_argument('--llvm-prefix', default=toolchain.llvm_prefix())
    r.add_argument('--columns', default=','.join(COLUMNS))
    a = ap.parse_args()
    try:
        rows = read(a.manifest)
    except (OSError, ValueError) as e:
        sys.exit('manifest: %s' % e)
    columns = [c for c in a.columns.split(',') if c]
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        sys.exit('manifest: no column %s' % ', '.join(unknown))
    feats = rules.features(a.runtime_kind, toolchain.mlir_version(a.llvm_prefix).number)
    for row in rows:
        if a.names and row['name'] not in a.names:
            continue
        expected, why = rules.expectation(row, feats)
        cells = [' '.join(row[c]) if c == 'env' else row[c] for c in columns]
        print('\t'.join([expected, why or '-'] + [c or '-' for c in cells]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
