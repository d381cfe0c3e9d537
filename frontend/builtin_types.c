/* builtin_types.c — see builtin_types.h. */
#include "builtin_types.h"

#include "util.h"

static TypeExpr *named(Arena *a, const char *name) {
    TypeExpr *te = arena_alloc(a, sizeof *te);
    te->kind = TE_NAME;
    te->name = name;
    return te;
}

void builtin_types_add(Program *prog) {
    static const char *const fields[] = {"status",   "headers",    "contentType",
                                         "streamFd", "isComplete", "partialBody"};
    static const char *const types[] = {"int", "string", "string", "int", "bool", "string"};
    enum { N = sizeof fields / sizeof *fields };
    Arena *a = prog->arena;
    TypeDecl *td = arena_alloc(a, sizeof *td);
    td->name = "HttpResponse";
    td->kind = TD_RECORD;
    td->builtin = true;
    td->nfields = N;
    td->fields = arena_alloc(a, sizeof(char *) * N);
    td->ftypes = arena_alloc(a, sizeof(TypeExpr *) * N);
    for (int i = 0; i < N; i++) {
        td->fields[i] = fields[i];
        td->ftypes[i] = named(a, types[i]);
    }
    /* first, so that it is the one found by name even when the program (wrongly) declares
     * a type of the same name */
    vec_push(a, &prog->tdecls, td);
    for (int i = prog->tdecls.len - 1; i > 0; i--)
        prog->tdecls.items[i] = prog->tdecls.items[i - 1];
    prog->tdecls.items[0] = td;
    for (int i = 0; i < prog->tdecls.len; i++) /* ids are positions (the checker's tables) */
        ((TypeDecl *)prog->tdecls.items[i])->id = i;
}
