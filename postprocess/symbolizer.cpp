// symbolizer.cpp — the C binding to LLVM's DebugInfo symbolizer (the one C++ file in the
// project, per DESIGN.md). Source: PROFILER.md §(f).4–5, [PROF-SYMBOLIZE-OFFLINE].
//
// One llvm::symbolize::LLVMSymbolizer per run, in process: it loads each object once and
// keeps it (LLVM caches modules by path), reads file/line and the inline chain from DWARF
// (symbolizeInlinedCode) and falls back to the symbol table (.symtab, .dynsym) when there
// is no debug info. Nothing here prints or throws; every llvm::Error is consumed.
extern "C" {
#include "internal.h"
}

#include <llvm/DebugInfo/DIContext.h>
#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <llvm/Object/BuildID.h>
#include <llvm/Object/MachO.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

struct ospprof_llvm {
  llvm::symbolize::LLVMSymbolizer sym;
  explicit ospprof_llvm(const llvm::symbolize::LLVMSymbolizer::Options &o) : sym(o) {}
};

static char *dup_known(const std::string &s) {
  // LLVM marks unknown names and files with "<invalid>" (or "??" in addr2line style).
  if (s.empty() || s == llvm::DILineInfo::BadString || s == llvm::DILineInfo::Addr2LineBadString)
    return nullptr;
  char *c = static_cast<char *>(std::malloc(s.size() + 1));
  if (!c) return nullptr;
  std::memcpy(c, s.data(), s.size() + 1);
  return c;
}

extern "C" ospprof_llvm *ospprof_llvm_new(void) {
  llvm::symbolize::LLVMSymbolizer::Options o;
  o.PrintFunctions = llvm::symbolize::FunctionNameKind::LinkageName;
  o.PathStyle = llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath;
  o.UseSymbolTable = true;
  o.Demangle = false; // §(f).5: the linkage name
  o.RelativeAddresses = false;
  return new (std::nothrow) ospprof_llvm(o);
}

extern "C" void ospprof_llvm_free(ospprof_llvm *s) { delete s; }

extern "C" int ospprof_llvm_symbolize(ospprof_llvm *s, const char *object, uint64_t addr,
                                      ospprof_symframe **out) {
  *out = nullptr;
  if (!s) return 0;
  llvm::object::SectionedAddress sa;
  sa.Address = addr;
  sa.SectionIndex = llvm::object::SectionedAddress::UndefSection;
  auto res = s->sym.symbolizeInlinedCode(std::string(object), sa);
  if (!res) {
    llvm::consumeError(res.takeError());
    return 0;
  }
  uint32_t n = res->getNumberOfFrames();
  if (n == 0) return 0;
  auto *f = static_cast<ospprof_symframe *>(std::calloc(n, sizeof(ospprof_symframe)));
  if (!f) return 0;
  for (uint32_t i = 0; i < n; i++) {
    const llvm::DILineInfo &li = res->getFrame(i); // 0 = innermost
    f[i].name = dup_known(li.FunctionName);
    f[i].file = dup_known(li.FileName);
    f[i].line = li.Line;
  }
  *out = f;
  return static_cast<int>(n);
}

extern "C" void ospprof_symframes_free(ospprof_symframe *f, int n) {
  if (!f) return;
  for (int i = 0; i < n; i++) {
    std::free(f[i].name);
    std::free(f[i].file);
  }
  std::free(f);
}

extern "C" char *ospprof_llvm_build_id(const char *object) {
  auto bin = llvm::object::ObjectFile::createObjectFile(object);
  if (!bin) {
    llvm::consumeError(bin.takeError());
    return nullptr;
  }
  const llvm::object::ObjectFile *obj = bin->getBinary();
  llvm::ArrayRef<uint8_t> id;
  if (const auto *macho = llvm::dyn_cast<llvm::object::MachOObjectFile>(obj))
    id = macho->getUuid();
  else
    id = llvm::object::getBuildID(obj);
  if (id.empty()) return nullptr;
  static const char hex[] = "0123456789abcdef";
  char *c = static_cast<char *>(std::malloc(id.size() * 2 + 1));
  if (!c) return nullptr;
  for (size_t i = 0; i < id.size(); i++) {
    c[2 * i] = hex[id[i] >> 4];
    c[2 * i + 1] = hex[id[i] & 15];
  }
  c[id.size() * 2] = 0;
  return c;
}
