#!/usr/bin/env python3
"""The one lowering recipe: MLIR to the LLVM dialect with the toolchain's
mlir-opt, then to LLVM IR with its mlir-translate --mlir-to-llvmir. The
corpus's RUN lines (corpus.py), stress, explore, bench and compat all lower
through lower(); the pipeline, when a caller gives none, is the default one
of the toolchain's MLIR version (pipelines.txt), never a fixed version's.

As a command (the harness's tests):
    lowering.py SRC -o OUT.ll [--pipeline P] [--llvm-prefix PREFIX]
        SRC lowered to OUT.ll (and OUT.llvm.mlir); prefix: $LLVM_PREFIX's
        by default, pipeline: the default one of its MLIR version

The .ll still holds LLVM coroutine intrinsics: run the coroutine passes
(e.g. opt -passes='default<O0>', as jit-harness and mlir-cpu-runner do)
before code generation.
"""
import argparse
import os
import subprocess
import sys

import toolchain


class LoweringError(Exception):
    """A tool of the lowering failed; the message names the command and
    ends with its stderr."""


def _run(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise LoweringError('%s failed:\n%s\n%s' % (
            os.path.basename(cmd[0]), ' '.join(cmd), r.stderr.strip()[-4000:]))


def default_pipeline(prefix=None):
    """The whole pipeline of the prefix's MLIR version."""
    return toolchain.mlir_version(prefix).pipeline()


def opt_command(src, pipeline=None, prefix=None):
    """mlir-opt SRC --pass-pipeline=P (P: the prefix version's default)."""
    if pipeline is None:
        pipeline = default_pipeline(prefix)
    return [toolchain.tools(prefix)['mlir_opt'], src, '--pass-pipeline=' + pipeline]


def lower(opt_cmd, ll, mlir=None, prefix=None, to_ir=True):
    """Runs `opt_cmd` (an mlir-opt command without -o: opt_command(), or a
    RUN line's stage 1) into `mlir` (default: LL without .ll, plus
    .llvm.mlir), then mlir-translate into `ll` (unless to_ir is false).
    Both files appear whole or not at all. Raises LoweringError."""
    if mlir is None:
        mlir = os.path.splitext(ll)[0] + '.llvm.mlir'
    env = toolchain.toolchain_env(prefix)
    _run(list(opt_cmd) + ['-o', mlir + '.tmp'], env)
    if to_ir:
        _run([toolchain.tools(prefix)['mlir_translate'], '--mlir-to-llvmir',
              mlir + '.tmp', '-o', ll + '.tmp'], env)
        os.replace(ll + '.tmp', ll)
    os.replace(mlir + '.tmp', mlir)
    return mlir, ll


def lower_file(src, ll, pipeline=None, prefix=None, mlir=None, to_ir=True):
    """SRC lowered with `pipeline` (default: the prefix version's)."""
    return lower(opt_command(src, pipeline, prefix), ll, mlir, prefix, to_ir)


def main():
    ap = argparse.ArgumentParser(description='Lower an MLIR file to LLVM IR (the one recipe).')
    ap.add_argument('src')
    ap.add_argument('-o', dest='ll', required=True, help='the LLVM IR file to write')
    ap.add_argument('--pipeline', help="default: the prefix's MLIR version's whole pipeline")
    ap.add_argument('--llvm-prefix', default=None, help='default: $LLVM_PREFIX, else %s'
                    % toolchain.DEFAULT_LLVM_PREFIX)
    a = ap.parse_args()
    try:
        lower_file(a.src, a.ll, a.pipeline, a.llvm_prefix)
    except (LoweringError, ValueError) as e:
        sys.exit('lowering: %s' % e)
    return 0


if __name__ == '__main__':
    sys.exit(main())
