// symbolizer.cpp — the C binding to LLVM's DebugInfo symbolizer (the one C++ file in the
// project, per docs/ARCHITECTURE.md). Source: docs/spec/profiler.md §(f).4–5, [PROF-SYMBOLIZE-OFFLINE].
//
// One llvm::symbolize::LLVMSymbolizer per run, in process: it loads each object once and
// keeps it (LLVM caches modules by path), reads file/line and the inline chain from DWARF
// (symbolizeInlinedCode) and falls back to the symbol table (.symtab, .dynsym) when there
// is no debug info. Nothing here prints or throws; every llvm::Error is consumed.
//
// Three corrections on top of LLVM (docs/profile-formats.md "Symbolization"):
//  - an address inside a PLT section (.plt, .plt.sec, .plt.got, .iplt) is named
//    `<target>@plt` when its slot resolves through the dynamic relocations (x86-64: the
//    entry's `jmp *slot(%rip)` or its lazy `push $index`), else `[plt]`. The symbol-table
//    fallback would otherwise name it after the nearest preceding symbol (`_init`, whose
//    size is 0 so LLVM cannot bound it);
//  - the outermost frame's name is dropped (the frame becomes a hex frame) when the symbol
//    it came from starts in another section than the address, or the address lies in no
//    executable section at all.
//  - an address on DWARF line 0 takes the line of the code before it in the same inline
//    chain of its function (line_before), as llvm-symbolizer --skip-line-zero does.
// And one fact for profile.c: where the object's x86-64 signal trampolines are
// (ospprof_llvm_is_sigreturn), whose recorded address is not a return address.
extern "C" {
#include "internal.h"
}

#include <llvm/DebugInfo/DIContext.h>
#include <llvm/Demangle/Demangle.h>
#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <llvm/Object/BuildID.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/MachO.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// An executable section of an ELF object (file addresses).
struct exec_section {
    uint64_t addr, size;
    bool plt;
};

// One PLT entry [lo, hi) and the function it jumps to ("" when unknown).
struct plt_entry {
    uint64_t lo, hi;
    std::string target;
};

// What the corrections need to know about one object; `known` false: not a 64-bit
// little-endian ELF file (or unreadable), no corrections.
struct object_layout {
    bool known = false;
    std::vector<exec_section> sections;
    std::vector<plt_entry> plt;
    std::vector<uint64_t> sigreturn; // x86-64 rt_sigreturn trampolines, sorted

    const exec_section *section_of(uint64_t a) const {
        for (const exec_section &s : sections)
            if (a >= s.addr && a - s.addr < s.size) return &s;
        return nullptr;
    }
};

template <class T> T value_or(llvm::Expected<T> e, T fallback) {
    if (e) return *e;
    llvm::consumeError(e.takeError());
    return fallback;
}

bool is_plt_name(llvm::StringRef n) {
    return n == ".plt" || n == ".plt.sec" || n == ".plt.got" || n == ".iplt";
}

uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

// The x86-64 signal trampolines in one executable section's bytes (at file address
// `addr`): `mov $15,%rax` (48 c7 c0 0f 00 00 00) or `mov $15,%eax` (b8 0f 00 00 00), then
// `syscall` -- rt_sigreturn, which nothing but a trampoline calls; the same bytes the
// runtime's walker recognises (osp_prof__is_sigreturn, runtime/prof/prof_cfi.c).
void find_sigreturns(llvm::ArrayRef<uint8_t> bytes, uint64_t addr, std::vector<uint64_t> &out) {
    static const uint8_t a[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    static const uint8_t b[] = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    const uint8_t *base = bytes.data(), *end = base + bytes.size();
    for (const uint8_t *p = base; end - p >= (ptrdiff_t)sizeof b;) {
        // every pattern holds the bytes 0f 00 00 00 0f 05 at offset 3 (a) or 1 (b)
        const void *hit = memmem(p, (size_t)(end - p), "\x0f\x00\x00\x00\x0f\x05", 6);
        if (!hit) break;
        const uint8_t *h = static_cast<const uint8_t *>(hit);
        if (h - base >= 3 && std::memcmp(h - 3, a, sizeof a) == 0)
            out.push_back(addr + (uint64_t)(h - 3 - base));
        else if (h - base >= 1 && std::memcmp(h - 1, b, sizeof b) == 0)
            out.push_back(addr + (uint64_t)(h - 1 - base));
        p = h + 1;
    }
}

// Read the executable sections and, on x86-64, the target of every PLT entry.
object_layout read_layout(const std::string &path) {
    object_layout out;
    auto bin = llvm::object::ObjectFile::createObjectFile(path);
    if (!bin) {
        llvm::consumeError(bin.takeError());
        return out;
    }
    const auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(bin->getBinary());
    if (!elf) return out;
    const auto &ef = elf->getELFFile();
    using Shdr = llvm::object::ELF64LE::Shdr;
    auto secs = ef.sections();
    if (!secs) {
        llvm::consumeError(secs.takeError());
        return out;
    }
    out.known = true;

    // Dynamic relocations: GOT slot -> symbol name, and the .rela.plt (DT_JMPREL) entries
    // in order, for the lazy stubs' `push $index`.
    std::unordered_map<uint64_t, std::string> slot_name;
    std::vector<std::string> jmprel;
    for (const Shdr &rs : *secs) {
        if (rs.sh_type != llvm::ELF::SHT_RELA) continue;
        auto symtab = ef.getSection(rs.sh_link);
        if (!symtab) {
            llvm::consumeError(symtab.takeError());
            continue;
        }
        if ((*symtab)->sh_type != llvm::ELF::SHT_DYNSYM) continue;
        llvm::StringRef strtab = value_or(ef.getStringTableForSymtab(**symtab), llvm::StringRef());
        llvm::StringRef rname = value_or(ef.getSectionName(rs), llvm::StringRef());
        auto relas = ef.relas(rs);
        if (!relas) {
            llvm::consumeError(relas.takeError());
            continue;
        }
        for (const auto &r : *relas) {
            std::string name;
            auto sym = ef.getRelocationSymbol(r, *symtab);
            if (sym && *sym)
                name = value_or((*sym)->getName(strtab), llvm::StringRef()).str();
            else if (!sym)
                llvm::consumeError(sym.takeError());
            if (!name.empty()) slot_name.emplace(r.r_offset, name);
            if (rname == ".rela.plt") jmprel.push_back(name);
        }
    }

    bool x86_64 = ef.getHeader().e_machine == llvm::ELF::EM_X86_64;
    for (const Shdr &sh : *secs) {
        if (!(sh.sh_flags & llvm::ELF::SHF_ALLOC) || !(sh.sh_flags & llvm::ELF::SHF_EXECINSTR))
            continue;
        llvm::StringRef name = value_or(ef.getSectionName(sh), llvm::StringRef());
        bool plt = is_plt_name(name);
        out.sections.push_back({sh.sh_addr, sh.sh_size, plt});
        if (!x86_64 || sh.sh_type == llvm::ELF::SHT_NOBITS) continue;
        auto bytes = ef.getSectionContents(sh);
        if (!bytes) {
            llvm::consumeError(bytes.takeError());
            continue;
        }
        if (!plt) {
            find_sigreturns(*bytes, sh.sh_addr, out.sigreturn);
            continue;
        }
        uint64_t ent = sh.sh_entsize ? sh.sh_entsize : 16;
        for (uint64_t off = 0; off + ent <= bytes->size(); off += ent) {
            const uint8_t *p = bytes->data() + off, *end = p + ent;
            if (end - p >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
                p += 4;                       // endbr64
            if (p < end && p[0] == 0xf2) p++; // bnd
            std::string target;
            if (end - p >= 6 && p[0] == 0xff && p[1] == 0x25) { // jmp *disp32(%rip): the GOT slot
                uint64_t next = sh.sh_addr + off + (uint64_t)(p + 6 - (bytes->data() + off));
                uint64_t slot = next + (uint64_t)(int64_t)(int32_t)le32(p + 2);
                auto it = slot_name.find(slot);
                if (it != slot_name.end()) target = it->second;
            } else if (end - p >= 5 && p[0] == 0x68) { // push $index: a lazy stub (IBT layout)
                uint32_t idx = le32(p + 1);
                if (idx < jmprel.size()) target = jmprel[idx];
            }
            out.plt.push_back({sh.sh_addr + off, sh.sh_addr + off + ent, target});
        }
    }
    std::sort(out.sigreturn.begin(), out.sigreturn.end());
    return out;
}

} // namespace

struct ospprof_llvm {
    llvm::symbolize::LLVMSymbolizer sym;
    std::unordered_map<std::string, object_layout> layouts; // by object path
    explicit ospprof_llvm(const llvm::symbolize::LLVMSymbolizer::Options &o) : sym(o) {}

    const object_layout &layout(const std::string &path) {
        auto it = layouts.find(path);
        if (it == layouts.end()) it = layouts.emplace(path, read_layout(path)).first;
        return it->second;
    }
};

static char *dup_cstr(const std::string &s) {
    char *c = static_cast<char *>(std::malloc(s.size() + 1));
    if (c) std::memcpy(c, s.data(), s.size() + 1);
    return c;
}

static char *dup_known(const std::string &s) {
    // LLVM marks unknown names and files with "<invalid>" (or "??" in addr2line style).
    if (s.empty() || s == llvm::DILineInfo::BadString || s == llvm::DILineInfo::Addr2LineBadString)
        return nullptr;
    char *c = static_cast<char *>(std::malloc(s.size() + 1));
    if (!c) return nullptr;
    std::memcpy(c, s.data(), s.size() + 1);
    return c;
}

extern "C" ospprof_llvm *ospprof_llvm_new_ex(bool lines) {
    llvm::symbolize::LLVMSymbolizer::Options o;
    o.PrintFunctions = llvm::symbolize::FunctionNameKind::LinkageName;
    // FileLineInfoKind::None: the inlining chain's names without its line-table lookups
    o.PathStyle = lines ? llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath
                        : llvm::DILineInfoSpecifier::FileLineInfoKind::None;
    o.UseSymbolTable = true;
    o.Demangle = false; // §(f).5: the linkage name
    o.RelativeAddresses = false;
    return new (std::nothrow) ospprof_llvm(o);
}

extern "C" ospprof_llvm *ospprof_llvm_new(void) {
    return ospprof_llvm_new_ex(true);
}

extern "C" void ospprof_llvm_free(ospprof_llvm *s) {
    delete s;
}

// Line 0 is DWARF's "no source line": code the compiler made or merged from several lines
// (at -O2, the value an overflow check selects, the moves after a branch). Such an address
// takes the line of the nearest code before it with a line, in the same inline chain of the
// same function -- as llvm-symbolizer's --skip-line-zero does from LLVM 20 on, here walked
// back a byte at a time (every address inside a row has that row's line) over at most
// kLineZeroReach bytes. Without it the address had no line, and the attributed line of its
// samples (docs/spec/profiler.md §(l.6)) fell through to the caller's call line: 12 % of a
// loop's own time was shown on the line that called the function. 0 when nothing fits.
static constexpr uint64_t kLineZeroReach = 256;

static bool same_chain(const llvm::DIInliningInfo &a, const llvm::DIInliningInfo &b) {
    if (a.getNumberOfFrames() != b.getNumberOfFrames()) return false;
    for (uint32_t i = 0; i < a.getNumberOfFrames(); i++) {
        const llvm::DILineInfo &x = a.getFrame(i), &y = b.getFrame(i);
        if (x.FunctionName != y.FunctionName || x.FileName != y.FileName) return false;
        if (i > 0 && (x.Line != y.Line || x.Column != y.Column)) return false; // the call site
    }
    return true;
}

static uint32_t line_before(ospprof_llvm *s, const char *object, uint64_t addr,
                            const llvm::DIInliningInfo &at) {
    for (uint64_t back = 1; back <= kLineZeroReach && back <= addr; back++) {
        llvm::object::SectionedAddress sa;
        sa.Address = addr - back;
        sa.SectionIndex = llvm::object::SectionedAddress::UndefSection;
        auto res = s->sym.symbolizeInlinedCode(std::string(object), sa);
        if (!res) {
            llvm::consumeError(res.takeError());
            return 0;
        }
        if (!same_chain(at, *res)) return 0;
        if (res->getFrame(0).Line != 0) return res->getFrame(0).Line;
    }
    return 0;
}

extern "C" int ospprof_llvm_symbolize(ospprof_llvm *s, const char *object, uint64_t addr,
                                      ospprof_symframe **out) {
    *out = nullptr;
    if (!s) return 0;
    const object_layout &lay = s->layout(object);
    const exec_section *sec = lay.known ? lay.section_of(addr) : nullptr;
    if (sec && sec->plt) { // a PLT stub: never the preceding symbol's name
        std::string name = "[plt]";
        for (const plt_entry &e : lay.plt)
            if (addr >= e.lo && addr < e.hi && !e.target.empty()) name = e.target + "@plt";
        auto *f = static_cast<ospprof_symframe *>(std::calloc(1, sizeof(ospprof_symframe)));
        if (!f) return 0;
        f[0].name = dup_cstr(name);
        *out = f;
        return 1;
    }
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
    if (f[0].file && f[0].line == 0) f[0].line = line_before(s, object, addr, *res);
    // The outermost frame's name comes from the symbol table (or the subprogram): keep it
    // only when that symbol starts in the address's own executable section.
    const llvm::DILineInfo &outer = res->getFrame(n - 1);
    if (lay.known && outer.StartAddress && (!sec || lay.section_of(*outer.StartAddress) != sec)) {
        std::free(f[n - 1].name);
        f[n - 1].name = nullptr;
    }
    *out = f;
    return static_cast<int>(n);
}

extern "C" bool ospprof_llvm_is_sigreturn(ospprof_llvm *s, const char *object, uint64_t addr) {
    if (!s) return false;
    const object_layout &lay = s->layout(object);
    return std::binary_search(lay.sigreturn.begin(), lay.sigreturn.end(), addr);
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

extern "C" char *ospprof_llvm_soname(const char *object) {
    auto bin = llvm::object::ObjectFile::createObjectFile(object);
    if (!bin) {
        llvm::consumeError(bin.takeError());
        return nullptr;
    }
    const auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(bin->getBinary());
    if (!elf) return nullptr;
    const auto &ef = elf->getELFFile();
    auto secs = ef.sections();
    if (!secs) {
        llvm::consumeError(secs.takeError());
        return nullptr;
    }
    for (const auto &sh : *secs) {
        if (sh.sh_type != llvm::ELF::SHT_DYNAMIC) continue;
        auto dyns = ef.template getSectionContentsAsArray<llvm::object::ELF64LE::Dyn>(sh);
        if (!dyns) {
            llvm::consumeError(dyns.takeError());
            return nullptr;
        }
        auto strsec = ef.getSection(sh.sh_link);
        if (!strsec) {
            llvm::consumeError(strsec.takeError());
            return nullptr;
        }
        llvm::StringRef strtab = value_or(ef.getStringTable(**strsec), llvm::StringRef());
        for (const auto &d : *dyns) {
            if (d.d_tag != llvm::ELF::DT_SONAME) continue;
            uint64_t off = d.getVal();
            if (off >= strtab.size()) return nullptr;
            llvm::StringRef name = strtab.drop_front(off);
            name = name.take_until([](char ch) { return ch == 0; });
            // a name, never a path: the basename rule's output ("libfoo.so.1")
            if (name.empty() || name.contains('/')) return nullptr;
            return dup_cstr(name.str());
        }
        return nullptr;
    }
    return nullptr;
}

// One path element of a Rust legacy symbol, unescaped as rustc-demangle does: a leading
// "_$" loses its "_", ".." is "::", "$LT$" "<", "$u20$" " " and the other "$..$" escapes.
// False for an escape rustc never writes (the name is then not taken for Rust).
static bool rust_legacy_element(std::string_view e, std::string &out) {
    if (e.size() >= 2 && e[0] == '_' && e[1] == '$') e.remove_prefix(1);
    while (!e.empty()) {
        if (e[0] == '.') {
            bool two = e.size() > 1 && e[1] == '.';
            out += two ? "::" : ".";
            e.remove_prefix(two ? 2 : 1);
        } else if (e[0] == '$') {
            size_t end = e.find('$', 1);
            if (end == std::string_view::npos) return false;
            std::string_view esc = e.substr(1, end - 1);
            static const struct {
                const char *esc;
                char c;
            } named[] = {{"SP", '@'}, {"BP", '*'}, {"RF", '&'}, {"LT", '<'},
                         {"GT", '>'}, {"LP", '('}, {"RP", ')'}, {"C", ','}};
            bool done = false;
            for (const auto &n : named)
                if (esc == n.esc) {
                    out += n.c;
                    done = true;
                }
            if (!done) {
                // $uXX$: a character by its hex code (rustc writes ASCII punctuation so)
                if (esc.size() < 2 || esc.size() > 3 || esc[0] != 'u') return false;
                unsigned v = 0;
                for (char h : esc.substr(1)) {
                    int d = (h >= '0' && h <= '9')   ? h - '0'
                            : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                                     : -1;
                    if (d < 0) return false;
                    v = v * 16 + static_cast<unsigned>(d);
                }
                if (v < 0x20 || v > 0x7e) return false;
                out += static_cast<char>(v);
            }
            e.remove_prefix(end + 1);
        } else {
            size_t stop = e.find_first_of("$.");
            out += e.substr(0, stop);
            e.remove_prefix(stop == std::string_view::npos ? e.size() : stop);
        }
    }
    return true;
}

// A Rust legacy symbol (`_ZN` <len><element>... `E`, the last element `h` + 16 hex digits,
// the rule of binutils' rust_is_mangled), demangled as rustc-demangle's default form:
// `_ZN1r4work14Acc$LT$f64$GT$3add17h3cc997bb3c24bfedE` is `r::work::Acc<f64>::add::h3cc997bb3c24bfed`.
// LLVM's Itanium demangler reads such names as C++ and leaves the escapes in. A
// `.llvm.<digits>` suffix (LTO) is dropped, as rustc-demangle does; false: not Rust legacy.
static bool rust_legacy_demangle(std::string_view m, std::string &out) {
    if (m.substr(0, 3) != "_ZN") return false;
    m.remove_prefix(3);
    std::vector<std::string_view> elems;
    while (!m.empty() && m[0] != 'E') {
        size_t len = 0, i = 0;
        while (i < m.size() && m[i] >= '0' && m[i] <= '9' && len < 100000)
            len = len * 10 + static_cast<size_t>(m[i++] - '0');
        if (i == 0 || len == 0 || len > m.size() - i) return false;
        std::string_view e = m.substr(i, len);
        for (char ch : e)
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '$' || ch == '.'))
                return false;
        elems.push_back(e);
        m.remove_prefix(i + len);
    }
    if (m.empty() || elems.size() < 2) return false;
    m.remove_prefix(1); // 'E'
    std::string_view hash = elems.back();
    if (hash.size() != 17 || hash[0] != 'h' ||
        hash.substr(1).find_first_not_of("0123456789abcdef") != std::string_view::npos)
        return false;
    if (!m.empty()) {
        // only rustc's LTO suffix may follow
        if (m.substr(0, 6) != ".llvm." || m.size() == 6) return false;
        // rustc-demangle accepts hex digits and '@' there
        if (m.substr(6).find_first_not_of("0123456789ABCDEFabcdef@") != std::string_view::npos)
            return false;
    }
    std::string d;
    for (size_t k = 0; k < elems.size(); k++) {
        if (k) d += "::";
        if (!rust_legacy_element(elems[k], d)) return false;
    }
    out = std::move(d);
    return true;
}

extern "C" char *ospprof_demangle(const char *name) {
    if (!name || !name[0]) return nullptr;
    std::string_view full(name);
    std::string_view core = full, suffix;
    size_t at = full.rfind("@plt");
    if (at != std::string_view::npos && at + 4 == full.size()) {
        core = full.substr(0, at);
        suffix = full.substr(at);
    }
    // Only mangled names change: Itanium (_Z), Rust v0 (_R), D (_D), MSVC (?).
    if (!(core.size() > 2 &&
          ((core[0] == '_' && (core[1] == 'Z' || core[1] == 'R' || core[1] == 'D')) ||
           core[0] == '?')))
        return nullptr;
    std::string d;
    if (!rust_legacy_demangle(core, d)) d = llvm::demangle(core);
    if (d == core) return nullptr;
    d.append(suffix);
    return dup_cstr(d);
}

extern "C" int ospprof_llvm_object_info(const char *object, char **arch, uint64_t *text_size) {
    *arch = nullptr;
    *text_size = 0;
    auto bin = llvm::object::ObjectFile::createObjectFile(object);
    if (!bin) {
        llvm::consumeError(bin.takeError());
        return -1;
    }
    const llvm::object::ObjectFile *obj = bin->getBinary();
    switch (obj->getArch()) {
    case llvm::Triple::x86_64: *arch = dup_cstr("x86_64"); break;
    case llvm::Triple::aarch64: *arch = dup_cstr("arm64"); break;
    default: *arch = dup_cstr(""); break;
    }
    if (const auto *elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj)) {
        auto phdrs = elf->getELFFile().program_headers();
        if (!phdrs) {
            llvm::consumeError(phdrs.takeError());
            return 0;
        }
        uint64_t lo = UINT64_MAX, hi = 0;
        for (const auto &ph : *phdrs) {
            if (ph.p_type != llvm::ELF::PT_LOAD || !(ph.p_flags & llvm::ELF::PF_X)) continue;
            lo = std::min<uint64_t>(lo, ph.p_vaddr);
            hi = std::max<uint64_t>(hi, ph.p_vaddr + ph.p_memsz);
        }
        if (hi > lo) *text_size = hi - lo;
    }
    return 0;
}
