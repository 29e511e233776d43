#!/usr/bin/env python3
"""The one jit-harness command line: every script that runs a program
through jit-harness (scripts/corpus/: run.py, stress.py, explore.py,
fuzz_lowering.py; scripts/bench/: bench.py, harness_rate.sh) builds it here.

  command(harness, program_file, runtime, libs, ...)  any program
  for_row(harness, row, runtime, libs, ...)           a manifest row (or a
      corpus.py program): its .ll (or its MLIR source with --pipeline, for
      the sequential reference), check file and prefix, entry and name;
      returns (argv, env), env the row's VAR=VAL as a dict.

As a command (bash scripts):
  harness.py row MANIFEST NAME --harness H --runtime SO --libs A,B [-- EXTRA...]
      prints the command for that manifest row, NUL-separated, starting
      with `env VAR=VAL...` (read it with mapfile -d '').
  harness.py run MANIFEST NAME --harness H --runtime SO --libs A,B [-- EXTRA...]
      runs that command (for make recipes); its exit status is the harness's.
"""
import argparse
import os
import sys

import manifest


def command(harness, program, runtime, libs, check=None, check_prefix=None, entry=None,
            name=None, repeat=None, timeout=None, json=False, pipeline=None, mlir_bin=None,
            reference_runtime=None, expect_failure=None, verbose=False, extra=()):
    """jit-harness PROGRAM --runtime SO --shared-lib LIBS [options]. libs:
    comma-separated, or a list. reference_runtime: also run the sequential
    reference on it (--reference). expect_failure: the note of an XFAIL
    program (rules.xfail_note): its failed checks are one line."""
    if not isinstance(libs, str):
        libs = ','.join(libs)
    cmd = [str(harness), str(program)]
    if pipeline is not None:
        cmd += ['--pipeline', pipeline]
    if mlir_bin is not None:
        cmd += ['--mlir-bin', str(mlir_bin)]
    if reference_runtime is not None:
        cmd += ['--reference', '--reference-runtime', str(reference_runtime)]
    cmd += ['--runtime', str(runtime)]
    if libs:
        cmd += ['--shared-lib', libs]
    for flag, value in (('--check', check), ('--check-prefix', check_prefix),
                        ('--entry', entry), ('--name', name), ('--repeat', repeat),
                        ('--timeout', timeout), ('--expect-failure', expect_failure)):
        if value not in (None, ''):
            cmd += [flag, str(value)]
    if json:
        cmd.append('--json')
    if verbose:
        cmd.append('--verbose')
    return cmd + [str(x) for x in extra]


def row_env(row):
    """The row's VAR=VAL (a list, or space-separated text) as a dict."""
    env = row.get('env') or []
    if isinstance(env, str):
        env = env.split()
    return dict(kv.split('=', 1) for kv in env)


def for_row(harness, row, runtime, libs, reference=None, **options):
    """(argv, env) of a manifest row. reference=(floor runtime, MLIR bin
    directory): the program is given as its MLIR (check_file), lowered by
    the harness with the row's pipeline, and compared with its sequential
    reference on the floor."""
    if reference:
        floor, mlir_bin = reference
        options.update(pipeline=row['pipeline'], mlir_bin=mlir_bin, reference_runtime=floor)
        program = row['check_file']
    else:
        program = row['ll']
    prefix = row.get('check_prefix')
    cmd = command(harness, program, runtime, libs, check=row['check_file'],
                  check_prefix=None if prefix in (None, '', 'CHECK') else prefix,
                  entry=row['entry'], name=row['name'], **options)
    return cmd, row_env(row)


def main():
    argv = sys.argv[1:]
    extra = []
    if '--' in argv:
        i = argv.index('--')
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description='Print the jit-harness command of a manifest row.')
    sub = ap.add_subparsers(dest='cmd', required=True)
    for verb, what in (('row', 'print the command, NUL-separated'), ('run', 'run it')):
        r = sub.add_parser(verb, help=what)
        r.add_argument('manifest')
        r.add_argument('name')
        r.add_argument('--harness', required=True)
        r.add_argument('--runtime', required=True)
        r.add_argument('--libs', required=True)
    a = ap.parse_args(argv)
    try:
        rows = [x for x in manifest.read(a.manifest) if x['name'] == a.name]
    except (OSError, ValueError) as e:
        sys.exit('harness: %s' % e)
    if not rows:
        sys.exit('harness: %s is not in %s' % (a.name, a.manifest))
    cmd, env = for_row(a.harness, rows[0], a.runtime, a.libs, extra=extra)
    if a.cmd == 'run':
        sys.stdout.flush()
        os.execvpe(cmd[0], cmd, {**os.environ, **env})
    out = ['env'] + ['%s=%s' % kv for kv in env.items()] + cmd
    sys.stdout.write(''.join(x + '\0' for x in out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
