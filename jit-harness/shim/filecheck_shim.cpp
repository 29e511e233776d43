// filecheck_shim.cpp: the C interface of filecheck_shim.h over LLVM 19's
// FileCheck library. It does what llvm/utils/FileCheck's main() does between
// reading the files and printing the input dump, and nothing else: the
// matcher is LLVM's.
//
// Two things the library's public interface does not offer are reached
// through private members, which C++ allows in an explicit template
// instantiation (the access check does not apply there, [temp.spec]):
//
//  * The pattern context (variables) of a llvm::FileCheck. checkInput leaves
//    the variables the input defined in it, as string references into that
//    input. Before each check the shim calls the exported
//    FileCheckPatternContext::clearLocalVars(), which clears every variable
//    whose name does not start with '$' (what --enable-var-scope does at a
//    CHECK-LABEL), so each check starts as a fresh FileCheck process would.
//    clearLocalVars does not reset `$` variables, nor (LLVM 19) a numeric
//    variable defined again after a clear; for a check file that may define
//    either, the shim re-reads the file before each check instead.
//
//  * The file descriptor of llvm::errs(). A few diagnostics are written to
//    errs() directly rather than through the SourceMgr (invalid prefixes,
//    "no check strings found", pattern errors found while matching). While
//    the shim runs the library it points errs() at a memfd and moves what
//    was written into the messages, in order, so nothing reaches the
//    process's stderr. Only LLVM's errs() is redirected, not fd 2.
//
// errs() is one stream for the whole process, so every call that runs the
// library holds one process-wide lock (checks are serialized; the harness
// checks from one thread anyway).
//
// Both are tied to the LLVM 19 headers this file is compiled against (the
// build's LLVM_PREFIX, build.rs); the shim is built and tested with them.

#include "filecheck_shim.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/FileCheck/FileCheck.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

using namespace llvm;

namespace llvm {
class FileCheckPatternContext;
}

// llvm::FileCheckPatternContext::clearLocalVars(), exported by libLLVM-19.
// The class is defined in a private header of LLVM, so the member function is
// called through its symbol with the object as the first argument (the
// Itanium C++ ABI's `this`).
extern "C" void fcs_llvm_clear_local_vars(FileCheckPatternContext *self) __asm__(
    "_ZN4llvm23FileCheckPatternContext14clearLocalVarsEv");

namespace {

// Access to a private data member: the explicit instantiation below names it
// (allowed), and the friend function it defines returns the member pointer.
template <typename Tag, typename Tag::type Member> struct ExposeMember {
  friend typename Tag::type member(Tag) { return Member; }
};

struct PatternContextTag {
  using type = std::unique_ptr<FileCheckPatternContext> FileCheck::*;
  friend type member(PatternContextTag);
};
template struct ExposeMember<PatternContextTag, &FileCheck::PatternContext>;

struct FdTag {
  using type = int raw_fd_ostream::*;
  friend type member(FdTag);
};
template struct ExposeMember<FdTag, &raw_fd_ostream::FD>;

static_assert(int(FileCheckDiag::MatchFoundAndExpected) == int(FCS_MATCH_FOUND_AND_EXPECTED), "");
static_assert(int(FileCheckDiag::MatchFoundButExcluded) == int(FCS_MATCH_FOUND_BUT_EXCLUDED), "");
static_assert(int(FileCheckDiag::MatchFoundButWrongLine) == int(FCS_MATCH_FOUND_BUT_WRONG_LINE), "");
static_assert(int(FileCheckDiag::MatchFoundButDiscarded) == int(FCS_MATCH_FOUND_BUT_DISCARDED), "");
static_assert(int(FileCheckDiag::MatchFoundErrorNote) == int(FCS_MATCH_FOUND_ERROR_NOTE), "");
static_assert(int(FileCheckDiag::MatchNoneAndExcluded) == int(FCS_MATCH_NONE_AND_EXCLUDED), "");
static_assert(int(FileCheckDiag::MatchNoneButExpected) == int(FCS_MATCH_NONE_BUT_EXPECTED), "");
static_assert(int(FileCheckDiag::MatchNoneForInvalidPattern) == int(FCS_MATCH_NONE_FOR_INVALID_PATTERN), "");
static_assert(int(FileCheckDiag::MatchFuzzy) == int(FCS_MATCH_FUZZY), "");

// The label --dump-input gives a directive kind (FileCheck.cpp's
// GetCheckTypeAbbreviation).
const char *checkAbbrev(const Check::FileCheckType &Ty) {
  switch (Ty) {
  case Check::CheckPlain:
    return Ty.getCount() > 1 ? "count" : "check";
  case Check::CheckNext:
    return "next";
  case Check::CheckSame:
    return "same";
  case Check::CheckNot:
    return "not";
  case Check::CheckDAG:
    return "dag";
  case Check::CheckLabel:
    return "label";
  case Check::CheckEmpty:
    return "empty";
  case Check::CheckComment:
    return "com";
  case Check::CheckEOF:
    return "eof";
  case Check::CheckBadNot:
    return "bad-not";
  case Check::CheckBadCount:
    return "bad-count";
  case Check::CheckMisspelled:
    return "misspelled";
  case Check::CheckNone:
    break;
  }
  return "none";
}

// A check file whose variables clearLocalVars cannot reset: one that may
// define a `$` (global) variable, which clearLocalVars keeps by design, or a
// numeric variable, which LLVM 19's clearLocalVars misses once it has
// cleared it (Pattern::match sets the value but does not put the variable
// back in the table clearLocalVars walks). Looks at every `[[...]]` on a line:
// a '$' in it, or a ':' in a `[[#...]]`. Over-approximates (a '$' or ':' in
// a regex counts), which only costs time.
bool needsFreshParse(StringRef Text) {
  size_t At = 0;
  while ((At = Text.find("[[", At)) != StringRef::npos) {
    size_t End = Text.find_first_of("]\n", At + 2);
    StringRef Block = Text.slice(At + 2, End == StringRef::npos ? Text.size() : End);
    if (Block.contains('$') || (Block.starts_with("#") && Block.contains(':')))
      return true;
    At += 2;
  }
  return false;
}

} // namespace

struct fcs_checker {
  // The options, owned: the request's StringRefs point into these.
  std::vector<std::string> CheckPrefixes, CommentPrefixes, ImplicitCheckNot;
  FileCheckRequest Req;
  std::string CheckName, RawCheck;
  bool FreshPerCheck = false;
  bool Valid = false;

  // The parsed file: the canonical check text and the SourceMgr that owns
  // its buffer and the --implicit-check-not buffers, which the patterns
  // point into.
  std::unique_ptr<FileCheck> FC;
  std::unique_ptr<SourceMgr> ParseSM;
  SmallString<4096> CheckText;
  unsigned CheckBufferID = 0;
  std::pair<unsigned, unsigned> ImplicitRange{0, 0};

  // Results of the last call.
  std::string Messages;
  std::vector<FileCheckDiag> Diags;
  SmallString<4096> InputBuffer;
  StringRef InputText; // InputBuffer without the NUL CanonicalizeFile appends

  // The memfd errs() writes to while the library runs, and how much of what
  // it holds has been moved into Messages.
  int ErrFd = -1;
  uint64_t ErrTellAtStart = 0;
  uint64_t ErrTaken = 0;
  bool Capturing = false;
};

namespace {

// Moves what errs() wrote since the last call into the messages.
void drainErrs(fcs_checker &C) {
  if (!C.Capturing)
    return;
  raw_fd_ostream &E = errs();
  E.flush();
  uint64_t Written = E.tell() - C.ErrTellAtStart;
  while (C.ErrTaken < Written) {
    char Buf[4096];
    size_t Want = std::min<uint64_t>(sizeof Buf, Written - C.ErrTaken);
    ssize_t N = pread(C.ErrFd, Buf, Want, static_cast<off_t>(C.ErrTaken));
    if (N <= 0)
      break;
    C.Messages.append(Buf, static_cast<size_t>(N));
    C.ErrTaken += static_cast<uint64_t>(N);
  }
}

// The lock that serializes every use of the library (see the top).
std::mutex LibraryLock;

// Points errs() at the checker's memfd for its lifetime, holding the
// library lock.
class ErrsCapture {
  std::lock_guard<std::mutex> Guard{LibraryLock};
  fcs_checker &C;
  int SavedFd = -1;

public:
  explicit ErrsCapture(fcs_checker &Checker) : C(Checker) {
    if (C.ErrFd < 0)
      C.ErrFd = memfd_create("jit-harness-filecheck", MFD_CLOEXEC);
    if (C.ErrFd < 0)
      return; // Degrade: the library's direct writes reach stderr.
    raw_fd_ostream &E = errs();
    E.flush();
    SavedFd = E.*member(FdTag());
    E.*member(FdTag()) = C.ErrFd;
    C.ErrTellAtStart = E.tell();
    C.ErrTaken = 0;
    C.Capturing = true;
  }
  ~ErrsCapture() {
    if (!C.Capturing)
      return;
    drainErrs(C);
    raw_fd_ostream &E = errs();
    E.*member(FdTag()) = SavedFd;
    if (E.has_error())
      E.clear_error();
    C.Capturing = false;
    if (C.ErrTaken > 0) {
      // Empty the memfd for the next capture (writes continue at the file
      // offset, so rewind it too).
      if (ftruncate(C.ErrFd, 0) == 0)
        lseek(C.ErrFd, 0, SEEK_SET);
    }
  }
  ErrsCapture(const ErrsCapture &) = delete;
  ErrsCapture &operator=(const ErrsCapture &) = delete;
};

void onDiagnostic(const SMDiagnostic &D, void *Context) {
  fcs_checker &C = *static_cast<fcs_checker *>(Context);
  drainErrs(C); // keep the order of the two channels
  raw_string_ostream OS(C.Messages);
  D.print(nullptr, OS, /*ShowColors=*/false);
  OS.flush();
}

// Reads the check file into a new FileCheck, as FileCheck's main() does.
bool parse(fcs_checker &C) {
  C.FC.reset();
  C.ParseSM.reset();
  C.FC = std::make_unique<FileCheck>(C.Req);
  C.ParseSM = std::make_unique<SourceMgr>();
  C.ParseSM->setDiagHandler(onDiagnostic, &C);
  if (!C.FC->ValidateCheckPrefixes())
    return false;
  std::unique_ptr<MemoryBuffer> Raw =
      MemoryBuffer::getMemBuffer(C.RawCheck, C.CheckName, /*RequiresNullTerminator=*/false);
  C.CheckText.clear();
  StringRef Text = C.FC->CanonicalizeFile(*Raw, C.CheckText);
  C.CheckBufferID = C.ParseSM->AddNewSourceBuffer(MemoryBuffer::getMemBuffer(Text, C.CheckName), SMLoc());
  C.ImplicitRange = {0, 0};
  return !C.FC->readCheckFile(*C.ParseSM, Text, &C.ImplicitRange);
}

std::vector<std::string> copyAll(const fcs_str *Items, size_t Count) {
  std::vector<std::string> Out;
  Out.reserve(Count);
  for (size_t I = 0; I < Count; ++I)
    Out.emplace_back(Items[I].ptr, Items[I].len);
  return Out;
}

fcs_str str(StringRef S) { return fcs_str{S.data(), S.size()}; }

} // namespace

extern "C" fcs_checker *fcs_parse(const fcs_options *O, fcs_str Name, fcs_str Text) {
  auto *C = new fcs_checker();
  C->CheckPrefixes = copyAll(O->check_prefixes, O->check_prefix_count);
  C->CommentPrefixes = copyAll(O->comment_prefixes, O->comment_prefix_count);
  C->ImplicitCheckNot = copyAll(O->implicit_check_not, O->implicit_check_not_count);
  for (const std::string &S : C->CheckPrefixes)
    C->Req.CheckPrefixes.push_back(S);
  for (const std::string &S : C->CommentPrefixes)
    C->Req.CommentPrefixes.push_back(S);
  for (const std::string &S : C->ImplicitCheckNot)
    C->Req.ImplicitCheckNot.push_back(S);
  C->Req.NoCanonicalizeWhiteSpace = O->strict_whitespace != 0;
  C->Req.MatchFullLines = O->match_full_lines != 0;
  C->Req.IgnoreCase = O->ignore_case != 0;
  C->Req.AllowUnusedPrefixes = O->allow_unused_prefixes != 0;
  C->Req.EnableVarScope = O->enable_var_scope != 0;
  // The tool enforces the empty-input rule itself (so does our caller);
  // the request carries the flag as the tool sets it.
  C->Req.AllowEmptyInput = O->allow_empty != 0;
  C->CheckName.assign(Name.ptr, Name.len);
  C->RawCheck.assign(Text.ptr, Text.len);
  C->FreshPerCheck = needsFreshParse(C->RawCheck);

  ErrsCapture Capture(*C);
  C->Valid = parse(*C);
  return C;
}

extern "C" int fcs_is_valid(const fcs_checker *C) { return C->Valid ? 1 : 0; }

extern "C" int fcs_check(fcs_checker *C, fcs_str InputName, fcs_str Input) {
  C->Messages.clear();
  C->Diags.clear();
  C->InputBuffer.clear();
  C->InputText = StringRef();
  if (!C->Valid)
    return -1;
  ErrsCapture Capture(*C);
  if (C->FreshPerCheck) {
    if (!parse(*C)) { // cannot fail twice on the same text, but say so if it does
      C->Valid = false;
      return -1;
    }
  } else {
    fcs_llvm_clear_local_vars((C->FC.get()->*member(PatternContextTag())).get());
  }

  StringRef Name(InputName.ptr, InputName.len);
  std::unique_ptr<MemoryBuffer> Raw = MemoryBuffer::getMemBuffer(
      StringRef(Input.ptr, Input.len), Name, /*RequiresNullTerminator=*/false);
  StringRef Text = C->FC->CanonicalizeFile(*Raw, C->InputBuffer);
  C->InputText = Text;

  // A SourceMgr for this check only, so inputs do not pile up: it refers to
  // (does not copy) the check file's and implicit patterns' buffers, where
  // diagnostics about directives point, and holds the input.
  SourceMgr SM;
  SM.setDiagHandler(onDiagnostic, C);
  for (unsigned ID = 1, E = C->ParseSM->getNumBuffers(); ID <= E; ++ID) {
    const MemoryBuffer *B = C->ParseSM->getMemoryBuffer(ID);
    SM.AddNewSourceBuffer(
        MemoryBuffer::getMemBuffer(B->getBuffer(), B->getBufferIdentifier(), /*RequiresNullTerminator=*/false),
        SMLoc());
  }
  SM.AddNewSourceBuffer(MemoryBuffer::getMemBuffer(Text, Name), SMLoc());
  return C->FC->checkInput(SM, Text, &C->Diags) ? 1 : 0;
}

extern "C" fcs_str fcs_messages(const fcs_checker *C) { return str(C->Messages); }

extern "C" size_t fcs_diag_count(const fcs_checker *C) { return C->Diags.size(); }

extern "C" fcs_diag fcs_get_diag(const fcs_checker *C, size_t I) {
  const FileCheckDiag &D = C->Diags[I];
  fcs_diag Out{};
  Out.check_id = reinterpret_cast<size_t>(D.CheckLoc.getPointer());
  Out.check_abbrev = str(checkAbbrev(D.CheckTy));
  unsigned Buffer = C->ParseSM->FindBufferContainingLoc(D.CheckLoc);
  if (Buffer == C->CheckBufferID)
    Out.check_line = C->ParseSM->getLineAndColumn(D.CheckLoc, Buffer).first;
  else if (Buffer >= C->ImplicitRange.first && Buffer < C->ImplicitRange.second)
    Out.implicit_index = Buffer - C->ImplicitRange.first + 1;
  Out.match_type = static_cast<int>(D.MatchTy);
  Out.input_start_line = D.InputStartLine;
  Out.input_start_col = D.InputStartCol;
  Out.input_end_line = D.InputEndLine;
  Out.input_end_col = D.InputEndCol;
  Out.note = str(D.Note);
  return Out;
}

extern "C" fcs_str fcs_canonical_input(const fcs_checker *C) { return str(C->InputText); }

extern "C" void fcs_free(fcs_checker *C) {
  if (!C)
    return;
  if (C->ErrFd >= 0)
    close(C->ErrFd);
  delete C;
}
