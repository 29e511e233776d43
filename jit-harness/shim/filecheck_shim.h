/*
 * filecheck_shim.h: LLVM 19's FileCheck library (llvm/FileCheck/FileCheck.h,
 * exported by libLLVM-19.so) behind a small C interface, so that jit-harness
 * can check every run's output in-process with exactly the matcher that the
 * `FileCheck` tool uses.
 *
 * Model, as in `FileCheck CHECKS --input-file=OUTPUT`:
 *   fcs_parse     = validate the prefixes and read the check file (the tool's
 *                   exit code 2 when fcs_is_valid says 0);
 *   fcs_check     = check one input against it (exit code 0 or 1). The
 *                   checker keeps the parsed file; each call starts from the
 *                   state right after parsing (no variable of an earlier call
 *                   is visible), so any number of inputs can be checked.
 * The tool's own rule that an empty input is an error unless --allow-empty
 * is the caller's (fcs_check accepts an empty input).
 *
 * Diagnostics: whatever FileCheck would print on standard error during the
 * last fcs_parse or fcs_check (its SourceMgr diagnostics and the few lines
 * the library writes to llvm::errs() directly) is collected, in order and
 * without colours, in fcs_messages; nothing reaches the process's stderr.
 * fcs_diag_count/fcs_get_diag give the structured FileCheckDiag records of
 * the last fcs_check (what `--dump-input` annotates) and
 * fcs_canonical_input the input they refer to (whitespace folded unless
 * strict_whitespace).
 *
 * Strings are (pointer, length) pairs and need not be NUL-terminated. Every
 * fcs_str returned stays valid until the next call on the same checker.
 * A checker must not be used from two threads at once. No C++ exception
 * crosses this interface (the shim and LLVM are built without exceptions).
 */
#ifndef JIT_HARNESS_FILECHECK_SHIM_H
#define JIT_HARNESS_FILECHECK_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fcs_str {
  const char *ptr;
  size_t len;
} fcs_str;

/* FileCheck's command-line options, by their FileCheck names. */
typedef struct fcs_options {
  const fcs_str *check_prefixes; /* --check-prefixes; none: CHECK */
  size_t check_prefix_count;
  const fcs_str *comment_prefixes; /* --comment-prefixes; none: COM,RUN */
  size_t comment_prefix_count;
  const fcs_str *implicit_check_not; /* --implicit-check-not, each */
  size_t implicit_check_not_count;
  int strict_whitespace;     /* --strict-whitespace */
  int match_full_lines;      /* --match-full-lines */
  int ignore_case;           /* --ignore-case */
  int allow_unused_prefixes; /* --allow-unused-prefixes */
  int enable_var_scope;      /* --enable-var-scope */
  int allow_empty;           /* --allow-empty (passed on; see above) */
} fcs_options;

/* llvm::FileCheckDiag::MatchType, same values (checked in the shim). */
enum fcs_match_type {
  FCS_MATCH_FOUND_AND_EXPECTED = 0,
  FCS_MATCH_FOUND_BUT_EXCLUDED = 1,
  FCS_MATCH_FOUND_BUT_WRONG_LINE = 2,
  FCS_MATCH_FOUND_BUT_DISCARDED = 3,
  FCS_MATCH_FOUND_ERROR_NOTE = 4,
  FCS_MATCH_NONE_AND_EXCLUDED = 5,
  FCS_MATCH_NONE_BUT_EXPECTED = 6,
  FCS_MATCH_NONE_FOR_INVALID_PATTERN = 7,
  FCS_MATCH_FUZZY = 8
};

/* One llvm::FileCheckDiag. Lines and columns are 1-based; the end is
 * exclusive. */
typedef struct fcs_diag {
  size_t check_id;         /* the same for every diagnostic of one directive */
  fcs_str check_abbrev;    /* "check", "next", "dag", ... as --dump-input labels them */
  unsigned check_line;     /* line in the check file, 0 for an implicit pattern */
  unsigned implicit_index; /* 1-based --implicit-check-not index, 0 otherwise */
  int match_type;          /* enum fcs_match_type */
  unsigned input_start_line, input_start_col;
  unsigned input_end_line, input_end_col;
  fcs_str note; /* replaces the match type's usual note when not empty */
} fcs_diag;

typedef struct fcs_checker fcs_checker;

/* Reads a check file. Never returns NULL; see fcs_is_valid. */
fcs_checker *fcs_parse(const fcs_options *options, fcs_str check_name, fcs_str check_text);
/* 1 when the check file was read without error, 0 otherwise (FileCheck's exit code 2). */
int fcs_is_valid(const fcs_checker *checker);
/* 1 when the input satisfies the checks, 0 when it does not, -1 when the
 * checker is not valid. input_name names the input in diagnostics. */
int fcs_check(fcs_checker *checker, fcs_str input_name, fcs_str input);
/* The diagnostics of the last fcs_parse or fcs_check, as FileCheck prints them. */
fcs_str fcs_messages(const fcs_checker *checker);
size_t fcs_diag_count(const fcs_checker *checker);
/* Requires i < fcs_diag_count. */
fcs_diag fcs_get_diag(const fcs_checker *checker, size_t i);
/* The input of the last fcs_check as FileCheck matched it. */
fcs_str fcs_canonical_input(const fcs_checker *checker);
void fcs_free(fcs_checker *checker);

#ifdef __cplusplus
}
#endif

#endif
