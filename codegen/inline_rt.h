/*
 * inline_rt.h — runtime helpers that generated code gets in IR, so the optimiser can inline
 * them (docs/compiler.md "Generated code"; docs/spec/language.md §14.2–§14.4).
 *
 * The runtime archive still defines every one of these functions; the module gets an
 * `available_externally` copy of the body, which the -O2 inliner may inline and which is
 * never emitted itself (at -O0 the calls go to the archive). So behaviour never depends on
 * whether a call was inlined. Only codegen.c includes this header.
 */
#ifndef OSP_INLINE_RT_H
#define OSP_INLINE_RT_H

#include <llvm-c/Core.h>
#include <stdbool.h>

/*
 * Called once when codegen first declares runtime function `name` as `fn` in `mod`:
 * gives the allocator `osp_gc_alloc` the attributes of an allocation function (LLVM may
 * then forward its stores to loads and delete allocations nothing reads), and gives the
 * small list and string helpers an inlinable body (osp_list_length, osp_list_at,
 * osp_list_get, osp_list_drop, osp_str_length, osp_str_cmp) when `with_bodies` is true
 * (-O2). Other names are left alone. `fp_attr` is the "frame-pointer"="all" attribute
 * every generated body carries (docs/spec/language.md §14.2). Never fails.
 */
void osp_inline_rt_declared(LLVMContextRef ctx, LLVMModuleRef mod, const char *name,
                            LLVMValueRef fn, LLVMAttributeRef fp_attr, bool with_bodies);

/*
 * Mark the conditional branch `br` (an LLVMBuildCondBr result) as almost never taking its
 * `true` successor when `true_is_rare`, else its `false` one: branch_weights metadata
 * (1 : 2000), which keeps the rare path out of line and the common one a fall-through.
 * Used for the Error side of `?:` and of Result boxing (docs/spec/language.md §6.2): errors
 * of checked arithmetic are the exception. Only a hint: never changes what the code does.
 */
void osp_ir_branch_rare(LLVMContextRef ctx, LLVMValueRef br, bool true_is_rare);

#endif
