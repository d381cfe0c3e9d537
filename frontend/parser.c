/* parser.c — see parser.h. */
#include "parser.h"

#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* Real nesting: how deeply the recursive descent may recurse (parentheses, blocks,
 * arguments, prefix operators, right-associative `?:` and `c ? a : b`, types, patterns). */
#define MAX_DEPTH 400

/* Left-associative operator chains (`a + b + c`, `x |> f |> g`, `o.f().g()`, `a[i][j]`)
 * are parsed by loops, not recursion, but they build a left-deep tree that every later
 * pass walks recursively. OSP_MAX_CHAIN (parser.h) bounds the number of chain operators
 * on any path from an expression's root to a leaf (for one flat chain: its operator
 * count), so together with MAX_DEPTH the tree's height stays within what the compile
 * stack holds (frontend.h: osp_run_on_compile_stack). */

typedef struct Parser {
    Arena *a;
    Diags *d;
    Program *prog;
    Token *toks;
    int ntoks;
    int i;
    int depth;
    int chain;     /* chain accounting (see chain_begin) */
    bool no_brace; /* inside a match scrutinee: `{` ends the expression */
    int syntax_errors;
    const char **type_names; /* every `type <Name>` of the file (declarations are hoisted) */
    int ntype_names;
    jmp_buf *recover;
} Parser;

static Token *peek(Parser *p) {
    return &p->toks[p->i];
}
static Token *peek_at(Parser *p, int k) {
    int j = p->i + k;
    return &p->toks[j < p->ntoks ? j : p->ntoks - 1];
}
static TokKind kind(Parser *p) {
    return p->toks[p->i].kind;
}
static Token *next(Parser *p) {
    Token *t = &p->toks[p->i];
    if (p->i < p->ntoks - 1) p->i++;
    return t;
}
static bool accept(Parser *p, TokKind k) {
    if (kind(p) == k) {
        next(p);
        return true;
    }
    return false;
}

static const char *describe(Token *t) {
    static char buf[96];
    if (t->kind == T_IDENT) {
        snprintf(buf, sizeof buf, "identifier `%.60s`", t->text);
        return buf;
    }
    if (t->kind == T_INT || t->kind == T_FLOAT) {
        snprintf(buf, sizeof buf, "number `%.60s`", t->text);
        return buf;
    }
    if (t->kind >= K_LET && t->kind <= K_STATIC) {
        snprintf(buf, sizeof buf, "keyword `%s`", tok_kind_name(t->kind));
        return buf;
    }
    return tok_kind_name(t->kind);
}

static _Noreturn void fail(Parser *p, Pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static _Noreturn void fail(Parser *p, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(p->d, pos, fmt, ap);
    va_end(ap);
    p->syntax_errors++;
    longjmp(*p->recover, 1);
}

static Token *expect(Parser *p, TokKind k, const char *what) {
    if (kind(p) != k)
        fail(p, peek(p)->pos, "expected %s %s, found %s", tok_kind_name(k), what,
             describe(peek(p)));
    return next(p);
}

static void enter(Parser *p, Pos pos) {
    if (++p->depth > MAX_DEPTH) fail(p, pos, "expression is nested too deeply");
}
static void leave(Parser *p) {
    p->depth--;
}

/*
 * Chain accounting: the height of an expression counted in chain operators only
 * (1 + the larger height of the two sides for each chain operator; other nodes add 0).
 * A chain loop calls chain_begin (saves and clears p->chain), parses its first operand
 * and reads that operand's height with chain_first, calls chain_grow after each further
 * operand, and chain_end reports the chain's height to whatever encloses it. Between a
 * clear and a read p->chain only grows (every chain_end takes the maximum), so it holds
 * the largest height of any chain inside the operand just parsed.
 */
static int chain_begin(Parser *p) {
    int saved = p->chain;
    p->chain = 0;
    return saved;
}
static int chain_first(Parser *p) {
    int h = p->chain;
    p->chain = 0;
    return h;
}
static int chain_grow(Parser *p, int height, Pos op) {
    int h = 1 + (height > p->chain ? height : p->chain);
    if (h > OSP_MAX_CHAIN)
        fail(p, op,
             "expression has more than %d operators in one chain; split it with `let` bindings",
             OSP_MAX_CHAIN);
    p->chain = 0;
    return h;
}
static void chain_end(Parser *p, int saved, int height) {
    p->chain = height > saved ? height : saved;
}

static Expr *parse_expr(Parser *p);
static Expr *parse_prefix(Parser *p);
static Expr *parse_block(Parser *p);
static Stmt *parse_stmt(Parser *p, bool top);
static TypeExpr *parse_type(Parser *p);

/* ---- literals ---- */

/* Parse decimal digits into *out; false if above `limit`. */
static bool parse_u64(const char *s, uint64_t limit, uint64_t *out) {
    uint64_t v = 0;
    for (; *s; s++) {
        unsigned dgt = (unsigned)(*s - '0');
        if (v > (limit - dgt) / 10) return false;
        v = v * 10 + dgt;
    }
    *out = v;
    return true;
}

static Expr *int_literal(Parser *p, Token *t, bool negative) {
    Expr *e = expr_new(p->a, E_INT, t->pos);
    uint64_t v = 0;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (!parse_u64(t->text, limit, &v)) {
        diag_error(p->d, t->pos, "integer literal %s%s does not fit in a 64-bit int",
                   negative ? "-" : "", t->text);
        p->syntax_errors++;
        v = 0;
    }
    e->u.ival = negative ? (int64_t)(0 - v) : (int64_t)v;
    return e;
}

static Expr *float_literal(Parser *p, Token *t, bool negative) {
    Expr *e = expr_new(p->a, E_FLOAT, t->pos);
    errno = 0;
    double v = strtod(t->text, NULL);
    e->u.fval = negative ? -v : v;
    return e;
}

static bool can_start_expr(TokKind k) {
    switch (k) {
    case T_INT:
    case T_FLOAT:
    case T_STRING:
    case T_IDENT:
    case K_TRUE:
    case K_FALSE:
    case P_LPAREN:
    case P_LBRACE:
    case P_LBRACKET:
    case K_FN:
    case P_BAR:
    case K_MATCH:
    case K_SPAWN:
    case K_AWAIT:
    case K_YIELD:
    case K_IF:
    case P_MINUS:
    case P_PLUS:
    case P_NOT:
    case K_PERFORM:
    case K_RESUME:
    case K_SEND:
    case K_RECV:
    case K_HANDLE: return true;
    default: return false;
    }
}

/* Parse one `${...}` fragment's source as an expression. */
static Expr *parse_fragment(Parser *p, StrPart *part) {
    int before = p->d->count;
    TokenList tl = lex(p->a, p->d, part->text, part->len, part->pos, part->map);
    p->syntax_errors += p->d->count - before;
    Token *save_toks = p->toks;
    int save_n = p->ntoks, save_i = p->i;
    bool save_nb = p->no_brace;
    p->toks = tl.toks;
    p->ntoks = tl.len;
    p->i = 0;
    p->no_brace = false;
    Expr *e;
    if (kind(p) == T_EOF) {
        Pos pos = part->pos;
        p->toks = save_toks;
        p->ntoks = save_n;
        p->i = save_i;
        fail(p, pos, "empty interpolation `${}`");
    }
    e = parse_expr(p);
    if (kind(p) != T_EOF) {
        Pos pos = peek(p)->pos;
        const char *what = describe(peek(p));
        p->toks = save_toks;
        p->ntoks = save_n;
        p->i = save_i;
        fail(p, pos, "unexpected %s in interpolation", what);
    }
    p->toks = save_toks;
    p->ntoks = save_n;
    p->i = save_i;
    p->no_brace = save_nb;
    return e;
}

static Expr *string_literal(Parser *p, Token *t) {
    if (t->nparts == 1 && !t->parts[0].is_expr) {
        Expr *e = expr_new(p->a, E_STRING, t->pos);
        e->u.str.s = t->parts[0].text;
        e->u.str.len = t->parts[0].len;
        return e;
    }
    Expr *e = expr_new(p->a, E_INTERP, t->pos);
    e->u.interp.nparts = t->nparts;
    e->u.interp.parts = arena_alloc(p->a, sizeof(Expr *) * (size_t)t->nparts);
    for (int k = 0; k < t->nparts; k++) {
        StrPart *part = &t->parts[k];
        if (part->is_expr) {
            enter(p, part->pos);
            e->u.interp.parts[k] = parse_fragment(p, part);
            leave(p);
        } else {
            Expr *s = expr_new(p->a, E_STRING, part->pos);
            s->u.str.s = part->text;
            s->u.str.len = part->len;
            e->u.interp.parts[k] = s;
        }
    }
    return e;
}

/* ---- types ---- */

static TypeExpr *parse_type(Parser *p) {
    Token *t = peek(p);
    enter(p, t->pos);
    TypeExpr *te = arena_alloc(p->a, sizeof *te);
    te->pos = t->pos;
    if (t->kind == P_LPAREN || (t->kind == K_FN && peek_at(p, 1)->kind == P_LPAREN)) {
        if (t->kind == K_FN) next(p);
        next(p);
        PtrVec args = {0};
        if (kind(p) != P_RPAREN) {
            do vec_push(p->a, &args, parse_type(p));
            while (accept(p, P_COMMA));
        }
        expect(p, P_RPAREN, "to close the parameter types");
        expect(p, P_ARROW, "in a function type");
        te->kind = TE_FN;
        te->args = (TypeExpr **)args.items;
        te->nargs = args.len;
        te->ret = parse_type(p);
        leave(p);
        return te;
    }
    if (t->kind == P_LBRACE) {
        /* anonymous record type `{ x: int, y: int }` */
        next(p);
        PtrVec names = {0}, types = {0};
        while (kind(p) != P_RBRACE) {
            Token *f = expect(p, T_IDENT, "naming a record field");
            expect(p, P_COLON, "after the field name");
            vec_push(p->a, &names, (void *)f->text);
            vec_push(p->a, &types, parse_type(p));
            if (!accept(p, P_COMMA)) break;
        }
        expect(p, P_RBRACE, "to close the record type");
        te->kind = TE_RECORD;
        te->fields = (const char **)names.items;
        te->args = (TypeExpr **)types.items;
        te->nargs = names.len;
        leave(p);
        return te;
    }
    if (t->kind != T_IDENT) fail(p, t->pos, "expected a type, found %s", describe(t));
    next(p);
    te->kind = TE_NAME;
    te->name = t->text;
    if (kind(p) == P_LT && !peek(p)->nl_before) {
        next(p);
        PtrVec args = {0};
        do vec_push(p->a, &args, parse_type(p));
        while (accept(p, P_COMMA));
        expect(p, P_GT, "to close the type arguments");
        te->args = (TypeExpr **)args.items;
        te->nargs = args.len;
    }
    leave(p);
    return te;
}

/* ---- patterns ---- */

static Pattern *parse_pattern(Parser *p);

/* `Ctor(p, q)` / `Ctor { a, b }` after the constructor name. */
static void parse_ctor_args(Parser *p, Pattern *pat, Token *t) {
    pat->kind = PAT_CTOR;
    pat->name = t->text;
    pat->name_pos = t->pos;
    pat->has_args = true;
    PtrVec subs = {0}, fields = {0};
    PtrVec fpos = {0};
    if (kind(p) == P_LBRACE) {
        next(p);
        pat->named = true;
        while (kind(p) != P_RBRACE) {
            Token *f = expect(p, T_IDENT, "naming a payload field");
            if (kind(p) == P_COLON)
                fail(p, peek(p)->pos,
                     "field renaming in patterns (`%s: x`) is not supported; the binder takes the "
                     "field's name",
                     f->text);
            Pattern *b = arena_alloc(p->a, sizeof *b);
            b->kind = PAT_BIND;
            b->pos = f->pos;
            b->name = f->text;
            b->name_pos = f->pos;
            vec_push(p->a, &subs, b);
            vec_push(p->a, &fields, (void *)f->text);
            Pos *fp = arena_alloc(p->a, sizeof *fp);
            *fp = f->pos;
            vec_push(p->a, &fpos, fp);
            if (!accept(p, P_COMMA)) break;
        }
        expect(p, P_RBRACE, "to close the pattern");
        pat->fields = (const char **)fields.items;
        pat->field_pos = arena_alloc(p->a, sizeof(Pos) * (size_t)(fpos.len + 1));
        for (int k = 0; k < fpos.len; k++) pat->field_pos[k] = *(Pos *)fpos.items[k];
    } else {
        next(p); /* ( */
        while (kind(p) != P_RPAREN) {
            vec_push(p->a, &subs, parse_pattern(p));
            if (!accept(p, P_COMMA)) break;
        }
        expect(p, P_RPAREN, "to close the pattern");
    }
    pat->subs = (Pattern **)subs.items;
    pat->nsubs = subs.len;
}

/* docs/spec/language.md §7.1: the structural row `{ f, g }` / `{ f, g, .. }` and the tuple row
 * `(a, _, c)` (at least two slots), from the opening brace or parenthesis. */
static void parse_struct_pattern(Parser *p, Pattern *pat) {
    Token *open = next(p);
    bool tuple = open->kind == P_LPAREN;
    pat->kind = PAT_STRUCT;
    pat->tuple = tuple;
    PtrVec subs = {0}, fields = {0}, fpos = {0};
    TokKind close = tuple ? P_RPAREN : P_RBRACE;
    while (kind(p) != close) {
        if (!tuple && kind(p) == P_DOTDOT) {
            next(p);
            pat->open = true;
            if (kind(p) != close)
                fail(p, peek(p)->pos, "`..` must be the last entry of a structural pattern");
            break;
        }
        Token *f = peek(p);
        if (f->kind != T_IDENT)
            fail(p, f->pos, "expected a %s in a %s pattern, found %s",
                 tuple ? "binder or `_`" : "field name", tuple ? "tuple" : "structural",
                 describe(f));
        next(p);
        if (kind(p) == P_COLON)
            fail(p, peek(p)->pos,
                 "field renaming in patterns (`%s: x`) is not supported; the binder takes the "
                 "field's name",
                 f->text);
        bool wild = strcmp(f->text, "_") == 0;
        if (wild && !tuple) fail(p, f->pos, "a structural pattern names fields; `_` is not one");
        const char *name = tuple ? arena_printf(p->a, "%d", subs.len) : f->text;
        for (int k = 0; !tuple && k < fields.len; k++)
            if (strcmp(fields.items[k], name) == 0)
                fail(p, f->pos, "field `%s` is named twice in this pattern", name);
        Pattern *b = arena_alloc(p->a, sizeof *b);
        b->kind = wild ? PAT_WILD : PAT_BIND;
        b->pos = f->pos;
        b->name = wild ? NULL : f->text;
        b->name_pos = f->pos;
        vec_push(p->a, &subs, b);
        vec_push(p->a, &fields, (void *)name);
        Pos *fp = arena_alloc(p->a, sizeof *fp);
        *fp = f->pos;
        vec_push(p->a, &fpos, fp);
        if (!accept(p, P_COMMA)) break;
    }
    expect(p, close, tuple ? "to close the tuple pattern" : "to close the structural pattern");
    if (subs.len == 0)
        fail(p, open->pos, "a %s pattern needs at least one %s", tuple ? "tuple" : "structural",
             tuple ? "slot" : "field name");
    if (tuple && subs.len < 2)
        fail(p, open->pos, "a tuple pattern has at least two slots: `(a, b)`");
    pat->subs = (Pattern **)subs.items;
    pat->nsubs = subs.len;
    pat->fields = (const char **)fields.items;
    pat->field_pos = arena_alloc(p->a, sizeof(Pos) * (size_t)(fpos.len + 1));
    for (int k = 0; k < fpos.len; k++) pat->field_pos[k] = *(Pos *)fpos.items[k];
}

static Pattern *parse_pattern(Parser *p) {
    Token *t = peek(p);
    Pattern *pat = arena_alloc(p->a, sizeof *pat);
    pat->pos = t->pos;
    enter(p, t->pos);
    switch (t->kind) {
    case T_INT:
        next(p);
        pat->kind = PAT_INT;
        pat->ival = int_literal(p, t, false)->u.ival;
        break;
    case T_FLOAT:
        next(p);
        pat->kind = PAT_FLOAT;
        pat->fval = float_literal(p, t, false)->u.fval;
        break;
    case P_MINUS:
    case P_PLUS: {
        bool neg = t->kind == P_MINUS;
        next(p);
        Token *n = peek(p);
        if (n->kind == T_INT) {
            next(p);
            pat->kind = PAT_INT;
            pat->ival = int_literal(p, n, neg)->u.ival;
        } else if (n->kind == T_FLOAT) {
            next(p);
            pat->kind = PAT_FLOAT;
            pat->fval = float_literal(p, n, neg)->u.fval;
        } else {
            fail(p, n->pos, "expected a number after `%s` in a pattern", neg ? "-" : "+");
        }
        break;
    }
    case T_STRING:
        next(p);
        if (t->nparts != 1 || t->parts[0].is_expr)
            fail(p, t->pos, "a string pattern cannot contain interpolation");
        pat->kind = PAT_STRING;
        pat->sval = t->parts[0].text;
        pat->slen = t->parts[0].len;
        break;
    case K_TRUE:
    case K_FALSE:
        next(p);
        pat->kind = PAT_BOOL;
        pat->bval = t->kind == K_TRUE;
        break;
    case T_IDENT: {
        next(p);
        bool is_result = strcmp(t->text, "Success") == 0 || strcmp(t->text, "Error") == 0;
        bool is_err = strcmp(t->text, "Error") == 0;
        if (is_result && kind(p) == P_LBRACE) {
            /* named payload: Success { value } / Error { message } */
            next(p);
            /* docs/spec/language.md §7: one binder of any spelling (`value` and `message` are
             * merely conventional) takes the payload or the message */
            pat->kind = is_err ? PAT_ERROR : PAT_SUCCESS;
            Token *f = expect(p, T_IDENT, "naming the binder");
            if (strcmp(f->text, "_") != 0) {
                pat->name = f->text;
                pat->name_pos = f->pos;
            }
            if (kind(p) == P_COLON)
                fail(p, peek(p)->pos, "field renaming in patterns is not supported");
            if (kind(p) == P_COMMA)
                fail(p, peek(p)->pos, "`%s { ... }` binds exactly one name", t->text);
            expect(p, P_RBRACE, "to close the pattern");
            break;
        }
        if (is_result && kind(p) == P_LPAREN && !peek(p)->nl_before) {
            next(p);
            pat->kind = is_err ? PAT_ERROR : PAT_SUCCESS;
            Token *f = peek(p);
            if (f->kind == T_IDENT) {
                next(p);
                if (strcmp(f->text, "_") != 0) {
                    pat->name = f->text;
                    pat->name_pos = f->pos;
                }
            } else {
                fail(p, f->pos, "expected a binder or `_` in `%s(...)`, found %s", t->text,
                     describe(f));
            }
            expect(p, P_RPAREN, "to close the pattern");
            break;
        }
        if (is_result) {
            pat->kind = is_err ? PAT_ERROR : PAT_SUCCESS;
            pat->bare = true; /* may mean a user's nullary variant (§3.3) */
            break;
        }
        if (strcmp(t->text, "_") == 0) {
            pat->kind = PAT_WILD;
            break;
        }
        if (kind(p) == P_LBRACE || (kind(p) == P_LPAREN && !peek(p)->nl_before)) {
            parse_ctor_args(p, pat, t);
            break;
        }
        pat->kind = PAT_BIND;
        pat->name = t->text;
        pat->name_pos = t->pos;
        if (kind(p) == P_COLON) {
            next(p);
            pat->annot = parse_type(p);
        }
        break;
    }
    case P_LBRACKET: {
        next(p);
        pat->kind = PAT_LIST;
        PtrVec subs = {0};
        while (kind(p) != P_RBRACKET) {
            if (kind(p) == P_ELLIPSIS) {
                Token *d = next(p);
                Token *r = peek(p);
                if (r->kind != T_IDENT)
                    fail(p, r->pos, "expected a name after `...` in a list pattern, found %s",
                         describe(r));
                next(p);
                pat->has_rest = true;
                pat->rest_name = strcmp(r->text, "_") == 0 ? NULL : r->text;
                pat->rest_pos = r->pos;
                if (subs.len == 0)
                    fail(p, d->pos, "a list pattern needs at least one element before `...rest`");
                if (kind(p) != P_RBRACKET)
                    fail(p, d->pos, "`...%s` must be the last element of a list pattern", r->text);
                break;
            }
            vec_push(p->a, &subs, parse_pattern(p));
            if (!accept(p, P_COMMA)) break;
        }
        expect(p, P_RBRACKET, "to close the list pattern");
        pat->subs = (Pattern **)subs.items;
        pat->nsubs = subs.len;
        break;
    }
    case P_LBRACE:
    case P_LPAREN: parse_struct_pattern(p, pat); break;
    default: fail(p, t->pos, "expected a pattern, found %s", describe(t));
    }
    leave(p);
    return pat;
}

/* ---- expressions ---- */

static Param *parse_params(Parser *p, TokKind close, int *count) {
    PtrVec ps = {0};
    if (kind(p) != close) {
        do {
            Token *t = peek(p);
            if (t->kind != T_IDENT)
                fail(p, t->pos, "expected a parameter name, found %s", describe(t));
            next(p);
            Param *pr = arena_alloc(p->a, sizeof *pr);
            pr->pos = t->pos;
            pr->name = strcmp(t->text, "_") == 0 ? NULL : t->text;
            if (accept(p, P_COLON)) pr->annot = parse_type(p);
            vec_push(p->a, &ps, pr);
        } while (accept(p, P_COMMA));
    }
    Param *arr = arena_alloc(p->a, sizeof(Param) * (size_t)(ps.len ? ps.len : 1));
    for (int k = 0; k < ps.len; k++) arr[k] = *(Param *)ps.items[k];
    *count = ps.len;
    return arr;
}

static Expr *parse_lambda(Parser *p) {
    Token *t = next(p); /* `fn` or `|` */
    Expr *e = expr_new(p->a, E_LAMBDA, t->pos);
    if (t->kind == K_FN) {
        expect(p, P_LPAREN, "after `fn` in a lambda");
        e->u.lambda.params = parse_params(p, P_RPAREN, &e->u.lambda.nparams);
        expect(p, P_RPAREN, "to close the parameters");
        if (accept(p, P_ARROW)) e->u.lambda.ret = parse_type(p);
    } else {
        e->u.lambda.params = parse_params(p, P_BAR, &e->u.lambda.nparams);
        if (e->u.lambda.nparams == 0)
            fail(p, t->pos, "a `|...|` lambda needs at least one parameter");
        expect(p, P_BAR, "to close the lambda parameters");
    }
    if (kind(p) == P_LBRACE) fail(p, peek(p)->pos, "expected `=>` before a lambda body");
    expect(p, P_FATARROW, "before the lambda body");
    bool nb = p->no_brace;
    p->no_brace = false;
    e->u.lambda.body = parse_expr(p);
    p->no_brace = nb;
    return e;
}

/* Arguments of a call, after `(`, up to and including `)`. Named arguments `name: e`
 * fill *names (NULL when every argument is positional); mixing is reported. */
static Expr **parse_args_named(Parser *p, int *n, const char ***names, Pos **npos) {
    PtrVec args = {0}, nm = {0};
    PtrVec np = {0};
    bool nb = p->no_brace;
    p->no_brace = false;
    bool any_named = false, any_pos = false;
    if (kind(p) != P_RPAREN) {
        do {
            if (kind(p) == P_RPAREN) break; /* trailing comma */
            Token *t = peek(p);
            const char *name = NULL;
            if (t->kind == T_IDENT && peek_at(p, 1)->kind == P_COLON) {
                if (!names) fail(p, t->pos, "named arguments are not allowed here");
                if (any_pos) fail(p, t->pos, "cannot mix named and positional arguments");
                next(p);
                next(p);
                name = t->text;
                any_named = true;
            } else {
                if (any_named) fail(p, t->pos, "cannot mix named and positional arguments");
                any_pos = true;
            }
            vec_push(p->a, &nm, (void *)name);
            Pos *pp = arena_alloc(p->a, sizeof *pp);
            *pp = t->pos;
            vec_push(p->a, &np, pp);
            vec_push(p->a, &args, parse_expr(p));
        } while (accept(p, P_COMMA));
    }
    expect(p, P_RPAREN, "to close the argument list");
    p->no_brace = nb;
    *n = args.len;
    if (names) {
        *names = NULL;
        if (any_named) {
            *names = (const char **)nm.items;
            *npos = arena_alloc(p->a, sizeof(Pos) * (size_t)(np.len + 1));
            for (int k = 0; k < np.len; k++) (*npos)[k] = *(Pos *)np.items[k];
        }
    }
    return (Expr **)args.items;
}

static Expr **parse_args(Parser *p, int *n) {
    return parse_args_named(p, n, NULL, NULL);
}

static Expr *parse_match(Parser *p) {
    Token *t = next(p);
    Expr *e = expr_new(p->a, E_MATCH, t->pos);
    bool nb = p->no_brace;
    p->no_brace = true;
    e->u.match.scrut = parse_expr(p);
    p->no_brace = false;
    expect(p, P_LBRACE, "to open the match arms");
    PtrVec arms = {0};
    while (kind(p) != P_RBRACE) {
        if (kind(p) == T_EOF)
            fail(p, peek(p)->pos, "unexpected end of file in `match` (missing `}`)");
        MatchArm *arm = arena_alloc(p->a, sizeof *arm);
        arm->pat = parse_pattern(p);
        expect(p, P_FATARROW, "after the pattern");
        arm->body = parse_expr(p);
        vec_push(p->a, &arms, arm);
    }
    next(p);
    p->no_brace = nb;
    if (arms.len == 0) fail(p, t->pos, "a `match` needs at least one arm");
    e->u.match.narms = arms.len;
    e->u.match.arms = arena_alloc(p->a, sizeof(MatchArm) * (size_t)arms.len);
    for (int k = 0; k < arms.len; k++) e->u.match.arms[k] = *(MatchArm *)arms.items[k];
    return e;
}

static Expr *parse_if(Parser *p) {
    Token *t = next(p);
    enter(p, t->pos);
    Expr *e = expr_new(p->a, E_IF, t->pos);
    bool nb = p->no_brace;
    p->no_brace = true;
    e->u.if_.cond = parse_expr(p);
    p->no_brace = false;
    if (kind(p) != P_LBRACE)
        fail(p, peek(p)->pos, "expected `{` after the `if` condition, found %s", describe(peek(p)));
    e->u.if_.then = parse_block(p);
    if (!accept(p, K_ELSE))
        fail(p, t->pos,
             "`if` needs an `else` branch (`if` is an expression; write `else { ... }`)");
    if (kind(p) == K_IF) {
        e->u.if_.els = parse_if(p);
    } else {
        if (kind(p) != P_LBRACE)
            fail(p, peek(p)->pos, "expected `{` or `if` after `else`, found %s", describe(peek(p)));
        e->u.if_.els = parse_block(p);
    }
    p->no_brace = nb;
    leave(p);
    return e;
}

static bool is_record_open(Parser *p) {
    /* `{ ident :` — record literal / update / constructor (not `::`) */
    return kind(p) == P_LBRACE && peek_at(p, 1)->kind == T_IDENT && peek_at(p, 2)->kind == P_COLON;
}

/* `{ name: e, ... }` (the opening brace is the current token). */
static FieldInit *parse_field_inits(Parser *p, int *n) {
    expect(p, P_LBRACE, "to open the fields");
    bool nb = p->no_brace;
    p->no_brace = false;
    PtrVec fs = {0};
    while (kind(p) != P_RBRACE) {
        Token *f = expect(p, T_IDENT, "naming a field");
        expect(p, P_COLON, "after the field name");
        FieldInit *fi = arena_alloc(p->a, sizeof *fi);
        fi->name = f->text;
        fi->pos = f->pos;
        fi->value = parse_expr(p);
        vec_push(p->a, &fs, fi);
        if (!accept(p, P_COMMA)) break;
    }
    expect(p, P_RBRACE, "to close the fields");
    p->no_brace = nb;
    FieldInit *arr = arena_alloc(p->a, sizeof(FieldInit) * (size_t)(fs.len + 1));
    for (int k = 0; k < fs.len; k++) arr[k] = *(FieldInit *)fs.items[k];
    *n = fs.len;
    return arr;
}

/* `{ "k": v, ... }` (the opening brace is the current token). */
static Expr *parse_map_literal(Parser *p) {
    Token *t = next(p);
    Expr *e = expr_new(p->a, E_MAPLIT, t->pos);
    bool nb = p->no_brace;
    p->no_brace = false;
    PtrVec ks = {0}, vs = {0};
    while (kind(p) != P_RBRACE) {
        vec_push(p->a, &ks, parse_expr(p));
        expect(p, P_COLON, "after the map key");
        vec_push(p->a, &vs, parse_expr(p));
        if (!accept(p, P_COMMA)) break;
    }
    expect(p, P_RBRACE, "to close the map literal");
    p->no_brace = nb;
    e->u.maplit.keys = (Expr **)ks.items;
    e->u.maplit.vals = (Expr **)vs.items;
    e->u.maplit.n = ks.len;
    return e;
}

/* `handle E (op binders => body)+ in body` */
static Expr *parse_handle(Parser *p) {
    Token *t = next(p);
    Expr *e = expr_new(p->a, E_HANDLE, t->pos);
    e->u.handle.is_static = accept(p, K_STATIC); /* docs/spec/language.md §12.5 */
    Token *name = expect(p, T_IDENT, "naming the effect to handle");
    e->u.handle.effect = name->text;
    e->u.handle.epos = name->pos;
    if (kind(p) == P_LT && !peek(p)->ws_before)
        fail(p, peek(p)->pos,
             "`handle` names the effect without type arguments (they are inferred)");
    bool nb = p->no_brace;
    p->no_brace = false;
    PtrVec arms = {0};
    while (kind(p) != K_IN) {
        Token *op = peek(p);
        if (op->kind != T_IDENT) {
            if (arms.len == 0)
                fail(p, op->pos, "expected an operation of `%s` to handle, found %s", name->text,
                     describe(op));
            fail(p, op->pos, "expected another arm or `in` after the arms of `handle`, found %s",
                 describe(op));
        }
        next(p);
        HandleArm *arm = arena_alloc(p->a, sizeof *arm);
        arm->op = op->text;
        arm->pos = op->pos;
        PtrVec bs = {0};
        while (kind(p) == T_IDENT) {
            Token *b = next(p);
            Param *pr = arena_alloc(p->a, sizeof *pr);
            pr->pos = b->pos;
            pr->name = strcmp(b->text, "_") == 0 ? NULL : b->text;
            vec_push(p->a, &bs, pr);
        }
        expect(p, P_FATARROW, "after the operation and its binders");
        arm->binders = arena_alloc(p->a, sizeof(Param) * (size_t)(bs.len + 1));
        for (int k = 0; k < bs.len; k++) arm->binders[k] = *(Param *)bs.items[k];
        arm->nbinders = bs.len;
        arm->body = parse_expr(p);
        vec_push(p->a, &arms, arm);
        if (kind(p) == T_EOF) fail(p, t->pos, "expected `in` after the arms of `handle`");
    }
    if (arms.len == 0)
        fail(p, peek(p)->pos,
             "`handle %s` needs at least one arm (`op binders => value`) before `in`", name->text);
    next(p); /* in */
    e->u.handle.body = parse_expr(p);
    p->no_brace = nb;
    e->u.handle.narms = arms.len;
    e->u.handle.arms = arena_alloc(p->a, sizeof(HandleArm) * (size_t)(arms.len + 1));
    for (int k = 0; k < arms.len; k++) e->u.handle.arms[k] = *(HandleArm *)arms.items[k];
    return e;
}

static bool is_type_name(Parser *p, const char *name) {
    for (int k = 0; k < p->ntype_names; k++)
        if (strcmp(p->type_names[k], name) == 0) return true;
    return false;
}

/* At `<` after a declared type's or constructor's name: do the tokens up to the matching
 * `>` look like type arguments (names, commas, function arrows, parentheses, anonymous
 * record types `{ x: int }`, nested `<`/`>`)? */
static bool type_args_ahead(Parser *p) {
    int depth = 0;
    for (int k = 0;; k++) {
        Token *t = peek_at(p, k);
        switch (t->kind) {
        case P_LT: depth++; break;
        case P_GT:
            if (--depth == 0) return true;
            break;
        case T_IDENT:
        case P_COMMA:
        case P_ARROW:
        case P_LPAREN:
        case P_RPAREN:
        case P_LBRACE:
        case P_RBRACE:
        case P_COLON:
        case K_FN: break;
        default: return false;
        }
    }
}

/* `<` Type ("," Type)* `>` — type arguments of a construction (docs/spec/language.md §3.3). */
static TypeExpr **parse_type_args(Parser *p, int *n) {
    expect(p, P_LT, "to open the type arguments");
    PtrVec args = {0};
    do vec_push(p->a, &args, parse_type(p));
    while (accept(p, P_COMMA));
    expect(p, P_GT, "to close the type arguments");
    *n = args.len;
    return (TypeExpr **)args.items;
}

static Expr *parse_primary(Parser *p) {
    Token *t = peek(p);
    switch (t->kind) {
    case T_INT: next(p); return int_literal(p, t, false);
    case T_FLOAT: next(p); return float_literal(p, t, false);
    case T_STRING: next(p); return string_literal(p, t);
    case K_TRUE:
    case K_FALSE: {
        next(p);
        Expr *e = expr_new(p->a, E_BOOL, t->pos);
        e->u.bval = t->kind == K_TRUE;
        return e;
    }
    case T_IDENT: {
        next(p);
        bool is_ok = strcmp(t->text, "Success") == 0, is_err = strcmp(t->text, "Error") == 0;
        if ((is_ok || is_err) && !p->no_brace && kind(p) == P_LBRACE) {
            next(p);
            Token *f = expect(p, T_IDENT, "naming the payload field");
            const char *field = is_err ? "message" : "value";
            if (strcmp(f->text, field) != 0)
                fail(p, f->pos, "`%s` has no field `%s` (its payload field is `%s`)", t->text,
                     f->text, field);
            expect(p, P_COLON, "after the field name");
            Expr *e = expr_new(p->a, E_RESULT_CTOR, t->pos);
            e->u.ctor.is_error = is_err;
            bool nb = p->no_brace;
            p->no_brace = false;
            e->u.ctor.e = parse_expr(p);
            p->no_brace = nb;
            accept(p, P_COMMA);
            expect(p, P_RBRACE, "to close the constructor");
            return e;
        }
        if (kind(p) == P_LT && !peek(p)->nl_before && is_type_name(p, t->text) &&
            type_args_ahead(p)) {
            /* `Box<int> { item: 7 }`: explicit type arguments, then the fields */
            int ntargs = 0;
            TypeExpr **targs = parse_type_args(p, &ntargs);
            if (!is_record_open(p))
                fail(p, peek(p)->pos,
                     "expected `{ field: value, ... }` after the type arguments "
                     "of `%s`, found %s",
                     t->text, describe(peek(p)));
            Expr *e = expr_new(p->a, E_RECORD, t->pos);
            e->u.record.tname = t->text;
            e->u.record.tpos = t->pos;
            e->u.record.targs = targs;
            e->u.record.ntargs = ntargs;
            bool nb = p->no_brace;
            p->no_brace = false;
            e->u.record.fields = parse_field_inits(p, &e->u.record.n);
            p->no_brace = nb;
            return e;
        }
        if (!p->no_brace && is_record_open(p) && !peek(p)->nl_before) {
            /* `Point { x: 1 }`, `Circle { radius: 2 }` — or the update `p { x: 1 }` of a
             * variable `p`: name resolution decides */
            Expr *e = expr_new(p->a, E_RECORD, t->pos);
            e->u.record.tname = t->text;
            e->u.record.tpos = t->pos;
            e->u.record.fields = parse_field_inits(p, &e->u.record.n);
            return e;
        }
        Expr *e = expr_new(p->a, E_IDENT, t->pos);
        e->u.ident.name = t->text;
        return e;
    }
    case P_LPAREN: {
        next(p);
        if (kind(p) == P_RPAREN) fail(p, t->pos, "`()` is not a value (Unit has no literal)");
        bool nb = p->no_brace;
        p->no_brace = false;
        Expr *e = parse_expr(p);
        if (kind(p) == P_COMMA)
            fail(p, peek(p)->pos, "tuples are not part of Osprey; expected `)`");
        expect(p, P_RPAREN, "to close the parenthesis");
        p->no_brace = nb;
        return e;
    }
    case P_LBRACE:
        if (is_record_open(p)) {
            Expr *e = expr_new(p->a, E_RECORD, t->pos);
            e->u.record.fields = parse_field_inits(p, &e->u.record.n);
            return e;
        }
        if (peek_at(p, 1)->kind == T_STRING && peek_at(p, 2)->kind == P_COLON)
            return parse_map_literal(p);
        return parse_block(p);
    case P_LBRACKET: {
        next(p);
        Expr *e = expr_new(p->a, E_LIST, t->pos);
        PtrVec el = {0};
        bool nb = p->no_brace;
        p->no_brace = false;
        if (kind(p) != P_RBRACKET) {
            do {
                if (kind(p) == P_RBRACKET) break;
                vec_push(p->a, &el, parse_expr(p));
            } while (accept(p, P_COMMA));
        }
        expect(p, P_RBRACKET, "to close the list");
        p->no_brace = nb;
        e->u.list.elems = (Expr **)el.items;
        e->u.list.n = el.len;
        return e;
    }
    case K_FN:
        if (peek_at(p, 1)->kind != P_LPAREN)
            fail(p, t->pos, "function declarations are only allowed at file scope");
        return parse_lambda(p);
    case P_BAR: return parse_lambda(p);
    case K_MATCH: return parse_match(p);
    case K_SPAWN: {
        next(p);
        Expr *e = expr_new(p->a, E_SPAWN, t->pos);
        bool nb = p->no_brace;
        p->no_brace = false;
        e->u.spawn.e = parse_expr(p);
        p->no_brace = nb;
        return e;
    }
    case K_YIELD: {
        next(p);
        Expr *e = expr_new(p->a, E_YIELD, t->pos);
        if (!peek(p)->nl_before && can_start_expr(kind(p))) e->u.yield.e = parse_expr(p);
        return e;
    }
    case K_IF: return parse_if(p);
    case K_PERFORM: {
        next(p);
        Expr *e = expr_new(p->a, E_PERFORM, t->pos);
        Token *ef = expect(p, T_IDENT, "naming the effect");
        if (kind(p) == P_LT)
            fail(p, peek(p)->pos,
                 "`perform` names the effect without type arguments (they are inferred)");
        expect(p, P_DOT, "after the effect name");
        Token *op = expect(p, T_IDENT, "naming the operation");
        if (kind(p) != P_LPAREN || peek(p)->nl_before)
            fail(p, peek(p)->pos,
                 "expected `(` after `perform %s.%s` (write `()` for no arguments)", ef->text,
                 op->text);
        next(p);
        e->u.perform.effect = ef->text;
        e->u.perform.epos = ef->pos;
        e->u.perform.op = op->text;
        e->u.perform.opos = op->pos;
        e->u.perform.args = parse_args(p, &e->u.perform.nargs);
        return e;
    }
    case K_RESUME: {
        next(p);
        if (kind(p) != P_LPAREN || peek(p)->nl_before)
            fail(p, peek(p)->pos, "expected `(` after `resume`");
        next(p);
        Expr *e = expr_new(p->a, E_RESUME, t->pos);
        int n;
        Expr **args = parse_args(p, &n);
        if (n > 1) fail(p, args[1]->pos, "`resume` takes at most one value");
        e->u.resume.e = n ? args[0] : NULL;
        return e;
    }
    case K_SEND:
    case K_RECV: {
        next(p);
        if (kind(p) != P_LPAREN || peek(p)->nl_before)
            fail(p, peek(p)->pos, "expected `(` after `%s`", t->kind == K_SEND ? "send" : "recv");
        next(p);
        int n;
        Expr **args = parse_args(p, &n);
        int want = t->kind == K_SEND ? 2 : 1;
        if (n != want)
            fail(p, t->pos, "`%s` expects %d argument%s, got %d",
                 t->kind == K_SEND ? "send" : "recv", want, want == 1 ? "" : "s", n);
        Expr *e;
        if (t->kind == K_SEND) {
            e = expr_new(p->a, E_SEND, t->pos);
            e->u.send.ch = args[0];
            e->u.send.v = args[1];
        } else {
            e = expr_new(p->a, E_RECV, t->pos);
            e->u.recv.ch = args[0];
        }
        return e;
    }
    case K_HANDLE: return parse_handle(p);
    case K_SELECT: fail(p, t->pos, "`select` is reserved and not supported");
    default: fail(p, t->pos, "expected an expression, found %s", describe(t));
    }
}

static Expr *parse_postfix(Parser *p) {
    int saved = chain_begin(p);
    Expr *e = parse_primary(p);
    int height = chain_first(p);
    for (;;) {
        Token *t = peek(p);
        if (t->kind == P_LPAREN && !t->nl_before) {
            next(p);
            Expr *c = expr_new(p->a, E_CALL, e->pos);
            c->u.call.callee = e;
            c->u.call.args =
                parse_args_named(p, &c->u.call.nargs, &c->u.call.names, &c->u.call.name_pos);
            e = c;
            height = chain_grow(p, height, t->pos);
            continue;
        }
        if (t->kind == P_LBRACKET && !t->ws_before) {
            next(p);
            Expr *x = expr_new(p->a, E_INDEX, t->pos);
            bool nb = p->no_brace;
            p->no_brace = false;
            x->u.index.e = e;
            x->u.index.idx = parse_expr(p);
            p->no_brace = nb;
            expect(p, P_RBRACKET, "to close the index");
            e = x;
            height = chain_grow(p, height, t->pos);
            continue;
        }
        if (t->kind == P_DOT && (peek_at(p, 1)->kind == T_INT || peek_at(p, 1)->kind == T_FLOAT)) {
            /* a positional field `.0` (docs/spec/language.md §3.3); `p.0.1` lexes its fields as
             * the float `0.1`, so a float is two fields */
            next(p);
            Token *num = next(p);
            const char *dot = strchr(num->text, '.');
            size_t n1 = dot ? (size_t)(dot - num->text) : strlen(num->text);
            for (int k = 0; k < (dot ? 2 : 1); k++) {
                const char *s = k == 0 ? num->text : dot + 1;
                size_t len = k == 0 ? n1 : strlen(dot + 1);
                Pos pos = num->pos;
                if (k == 1) pos.col += (int)n1 + 1;
                if (len > 1 && s[0] == '0')
                    fail(p, pos, "a positional field is written without leading zeros (`.%s`)",
                         arena_strndup(p->a, s, len));
                Expr *f = expr_new(p->a, E_FIELD, pos);
                f->u.field.e = e;
                f->u.field.name = arena_strndup(p->a, s, len);
                f->u.field.npos = pos;
                e = f;
                height = chain_grow(p, height, t->pos);
            }
            continue;
        }
        if (t->kind == P_DOT) {
            next(p);
            Token *name = expect(p, T_IDENT, "after `.`");
            if (kind(p) == P_LPAREN && !peek(p)->nl_before) {
                next(p);
                Expr *m = expr_new(p->a, E_METHOD, name->pos);
                m->u.method.recv = e;
                m->u.method.name = name->text;
                m->u.method.npos = name->pos;
                const char **names = NULL;
                Pos *npos = NULL;
                m->u.method.args = parse_args_named(p, &m->u.method.nargs, &names, &npos);
                if (names) fail(p, name->pos, "named arguments are not supported in method calls");
                e = m;
                height = chain_grow(p, height, t->pos);
                continue;
            }
            Expr *f = expr_new(p->a, E_FIELD, name->pos);
            f->u.field.e = e;
            f->u.field.name = name->text;
            f->u.field.npos = name->pos;
            e = f;
            height = chain_grow(p, height, t->pos);
            continue;
        }
        if (!p->no_brace && is_record_open(p) && !t->nl_before) {
            Expr *u = expr_new(p->a, E_UPDATE, t->pos);
            u->u.update.e = e;
            u->u.update.fields = parse_field_inits(p, &u->u.update.n);
            e = u;
            height = chain_grow(p, height, t->pos);
            continue;
        }
        break;
    }
    chain_end(p, saved, height);
    return e;
}

static Expr *parse_prefix(Parser *p) {
    Token *t = peek(p);
    /* a prefix operator is one level of recursion; an operand alone is none */
    bool prefix = t->kind == P_MINUS || t->kind == P_PLUS || t->kind == P_NOT || t->kind == K_AWAIT;
    if (prefix) enter(p, t->pos);
    Expr *e;
    if (t->kind == P_MINUS || t->kind == P_PLUS) {
        bool neg = t->kind == P_MINUS;
        next(p);
        Token *n = peek(p), *after = peek_at(p, 1);
        /* a sign applied directly to a numeric literal folds into the literal — unless a
         * postfix form (§5.1 level 9: call, `.field`, `.method()`, index) continues the
         * literal, which then binds first: `-5.toString()` is `-(5.toString())` */
        bool postfix = (after->kind == P_LPAREN && !after->nl_before) || after->kind == P_DOT ||
                       (after->kind == P_LBRACKET && !after->ws_before);
        if (n->kind == T_INT && !postfix) {
            next(p);
            e = int_literal(p, n, neg);
            e->pos = t->pos;
        } else if (n->kind == T_FLOAT && !postfix) {
            next(p);
            e = float_literal(p, n, neg);
            e->pos = t->pos;
        } else {
            Expr *x = parse_prefix(p);
            if (x->kind == E_INT && (!neg || x->u.ival != INT64_MIN)) {
                /* docs/spec/language.md §1.4: the fold is recursive and sees through
                 * parentheses (`--1`, `-(1)`, `-(-1)`); only negating the minimum again
                 * stays a checked negation */
                e = x;
                if (neg) e->u.ival = -e->u.ival;
                e->pos = t->pos;
            } else if (x->kind == E_FLOAT) {
                e = x;
                if (neg) e->u.fval = -e->u.fval;
                e->pos = t->pos;
            } else {
                e = expr_new(p->a, E_UNARY, t->pos);
                e->u.un.op = neg ? UOP_NEG : UOP_PLUS;
                e->u.un.e = x;
            }
        }
    } else if (t->kind == P_NOT) {
        next(p);
        e = expr_new(p->a, E_UNARY, t->pos);
        e->u.un.op = UOP_NOT;
        e->u.un.e = parse_prefix(p);
    } else if (t->kind == K_AWAIT) {
        next(p);
        e = expr_new(p->a, E_AWAIT, t->pos);
        e->u.await.e = parse_prefix(p);
    } else {
        e = parse_postfix(p);
    }
    if (prefix) leave(p);
    return e;
}

/* `x |> rhs`: rhs is a call (x becomes its first argument) or any callable. */
static Expr *make_pipe(Parser *p, Expr *x, Expr *rhs, Pos pos) {
    if (rhs->kind == E_CALL && !rhs->u.call.piped) {
        int n = rhs->u.call.nargs;
        Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
        args[0] = x;
        for (int k = 0; k < n; k++) args[k + 1] = rhs->u.call.args[k];
        if (rhs->u.call.names) {
            /* the piped value fills the first parameter; the others are named */
            const char **names = arena_alloc(p->a, sizeof(char *) * (size_t)(n + 1));
            Pos *np = arena_alloc(p->a, sizeof(Pos) * (size_t)(n + 1));
            np[0] = x->pos;
            for (int k = 0; k < n; k++) {
                names[k + 1] = rhs->u.call.names[k];
                np[k + 1] = rhs->u.call.name_pos[k];
            }
            rhs->u.call.names = names;
            rhs->u.call.name_pos = np;
        }
        rhs->u.call.args = args;
        rhs->u.call.nargs++;
        rhs->u.call.piped = true;
        return rhs;
    }
    if (rhs->kind == E_METHOD) {
        int n = rhs->u.method.nargs;
        Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(n + 1));
        args[0] = x;
        for (int k = 0; k < n; k++) args[k + 1] = rhs->u.method.args[k];
        rhs->u.method.args = args;
        rhs->u.method.nargs++;
        return rhs;
    }
    Expr *c = expr_new(p->a, E_CALL, pos);
    c->u.call.callee = rhs;
    c->u.call.args = arena_alloc(p->a, sizeof(Expr *));
    c->u.call.args[0] = x;
    c->u.call.nargs = 1;
    c->u.call.piped = true;
    return c;
}

static Expr *parse_pipe(Parser *p) {
    int saved = chain_begin(p);
    Expr *l = parse_prefix(p);
    int height = chain_first(p);
    while (kind(p) == P_PIPE) {
        Token *op = next(p);
        Expr *rhs;
        if ((kind(p) == K_FN && peek_at(p, 1)->kind == P_LPAREN) || kind(p) == P_BAR)
            rhs = parse_lambda(p);
        else
            rhs = parse_prefix(p);
        height = chain_grow(p, height, op->pos);
        l = make_pipe(p, l, rhs, op->pos);
    }
    chain_end(p, saved, height);
    return l;
}

static Expr *binary(Parser *p, BinOp op, Expr *l, Expr *r, Pos pos) {
    Expr *e = expr_new(p->a, E_BINARY, pos);
    e->u.bin.op = op;
    e->u.bin.l = l;
    e->u.bin.r = r;
    return e;
}

static Expr *parse_mul(Parser *p) {
    int saved = chain_begin(p);
    Expr *l = parse_pipe(p);
    int height = chain_first(p);
    for (;;) {
        TokKind k = kind(p);
        BinOp op;
        if (k == P_STAR)
            op = OP_MUL;
        else if (k == P_SLASH)
            op = OP_DIV;
        else if (k == P_PERCENT)
            op = OP_MOD;
        else
            break;
        Token *t = next(p);
        Expr *r = parse_pipe(p);
        height = chain_grow(p, height, t->pos);
        l = binary(p, op, l, r, t->pos);
    }
    chain_end(p, saved, height);
    return l;
}

static Expr *parse_add(Parser *p) {
    int saved = chain_begin(p);
    Expr *l = parse_mul(p);
    int height = chain_first(p);
    for (;;) {
        TokKind k = kind(p);
        if (k != P_PLUS && k != P_MINUS) break;
        /* `- 1 =>` starts a negative literal pattern of the next match arm */
        TokKind k1 = peek_at(p, 1)->kind;
        if ((k1 == T_INT || k1 == T_FLOAT) && peek_at(p, 2)->kind == P_FATARROW) break;
        Token *t = next(p);
        Expr *r = parse_mul(p);
        height = chain_grow(p, height, t->pos);
        l = binary(p, k == P_PLUS ? OP_ADD : OP_SUB, l, r, t->pos);
    }
    chain_end(p, saved, height);
    return l;
}

static Expr *parse_cmp(Parser *p) {
    int saved = chain_begin(p);
    Expr *l = parse_add(p);
    int height = chain_first(p);
    for (;;) {
        BinOp op;
        switch (kind(p)) {
        case P_EQ: op = OP_EQ; break;
        case P_NE: op = OP_NE; break;
        case P_LT: op = OP_LT; break;
        case P_GT: op = OP_GT; break;
        case P_LE: op = OP_LE; break;
        case P_GE: op = OP_GE; break;
        default: goto done;
        }
        Token *t = next(p);
        Expr *r = parse_add(p);
        height = chain_grow(p, height, t->pos);
        l = binary(p, op, l, r, t->pos);
    }
done:
    chain_end(p, saved, height);
    return l;
}

static Expr *parse_and(Parser *p) {
    int saved = chain_begin(p);
    Expr *l = parse_cmp(p);
    int height = chain_first(p);
    while (kind(p) == P_AND) {
        Token *t = next(p);
        Expr *r = parse_cmp(p);
        height = chain_grow(p, height, t->pos);
        l = binary(p, OP_AND, l, r, t->pos);
    }
    chain_end(p, saved, height);
    return l;
}

static Expr *parse_or(Parser *p) {
    int saved = chain_begin(p);
    Expr *l = parse_and(p);
    int height = chain_first(p);
    while (kind(p) == P_OR) {
        Token *t = next(p);
        Expr *r = parse_and(p);
        height = chain_grow(p, height, t->pos);
        l = binary(p, OP_OR, l, r, t->pos);
    }
    chain_end(p, saved, height);
    return l;
}

/* After an operand: `{ a, b } ?` opens a structural ternary (docs/spec/language.md §5.6)? */
static bool is_struct_ternary(Parser *p) {
    if (p->no_brace || kind(p) != P_LBRACE || peek(p)->nl_before) return false;
    for (int k = 1;; k += 2) {
        if (peek_at(p, k)->kind != T_IDENT) return false;
        TokKind sep = peek_at(p, k + 1)->kind;
        if (sep == P_RBRACE) return peek_at(p, k + 2)->kind == P_QUESTION;
        if (sep != P_COMMA) return false;
    }
}

/*
 * docs/spec/language.md §5.6: `r { f1, f2 } ? a : b` binds the fields of the record `r`
 * (evaluated once) under their own names and is `a`; `b` is parsed and dropped, never
 * evaluated nor checked. It becomes the block `{ let $struct = r  let f1 = $struct.f1 … a }`
 * (`$struct` cannot be written in a program), so field access checks the record.
 */
static Expr *parse_struct_ternary(Parser *p, Expr *r) {
    Token *open = next(p);
    Expr *blk = expr_new(p->a, E_BLOCK, open->pos);
    PtrVec stmts = {0};
    Stmt *tmp = stmt_new(p->a, S_LET, r->pos);
    tmp->u.let.name = "$struct";
    tmp->u.let.name_pos = r->pos;
    tmp->u.let.init = r;
    vec_push(p->a, &stmts, tmp);
    for (;;) {
        Token *f = next(p);
        for (int k = 1; k < stmts.len; k++)
            if (strcmp(((Stmt *)stmts.items[k])->u.let.name, f->text) == 0)
                fail(p, f->pos, "field `%s` is named twice in this structural ternary", f->text);
        Expr *id = expr_new(p->a, E_IDENT, f->pos);
        id->u.ident.name = "$struct";
        Expr *fe = expr_new(p->a, E_FIELD, f->pos);
        fe->u.field.e = id;
        fe->u.field.name = f->text;
        fe->u.field.npos = f->pos;
        Stmt *st = stmt_new(p->a, S_LET, f->pos);
        st->u.let.name = f->text;
        st->u.let.name_pos = f->pos;
        st->u.let.init = fe;
        vec_push(p->a, &stmts, st);
        if (next(p)->kind == P_RBRACE) break; /* else the comma */
    }
    next(p); /* ? */
    bool nb = p->no_brace;
    p->no_brace = false;
    Stmt *val = stmt_new(p->a, S_EXPR, peek(p)->pos);
    val->u.expr = parse_expr(p);
    vec_push(p->a, &stmts, val);
    expect(p, P_COLON, "in the structural ternary `r { f } ? a : b`");
    p->no_brace = nb;
    (void)parse_expr(p); /* `b`: never evaluated nor type-checked */
    blk->u.block.stmts = (Stmt **)stmts.items;
    blk->u.block.nstmts = stmts.len;
    return blk;
}

static Expr *parse_expr(Parser *p) {
    enter(p, peek(p)->pos);
    Expr *l = parse_or(p);
    if (is_struct_ternary(p)) {
        l = parse_struct_ternary(p, l);
    } else if (kind(p) == P_ELVIS) {
        Token *t = next(p);
        Expr *e = expr_new(p->a, E_ELVIS, t->pos);
        e->u.elvis.l = l;
        e->u.elvis.r = parse_expr(p);
        l = e;
    } else if (kind(p) == P_QUESTION) {
        Token *t = next(p);
        Expr *e = expr_new(p->a, E_IF, t->pos);
        e->u.if_.cond = l;
        bool nb = p->no_brace;
        p->no_brace = false;
        e->u.if_.then = parse_expr(p);
        expect(p, P_COLON, "in the conditional expression `c ? a : b`");
        p->no_brace = nb;
        e->u.if_.els = parse_expr(p);
        l = e;
    }
    leave(p);
    return l;
}

static Expr *parse_block(Parser *p) {
    Token *t = expect(p, P_LBRACE, "to open a block");
    enter(p, t->pos);
    Expr *e = expr_new(p->a, E_BLOCK, t->pos);
    PtrVec stmts = {0};
    bool nb = p->no_brace;
    p->no_brace = false;
    while (kind(p) != P_RBRACE) {
        if (kind(p) == T_EOF) fail(p, t->pos, "unclosed `{` (missing `}`)");
        vec_push(p->a, &stmts, parse_stmt(p, false));
    }
    next(p);
    p->no_brace = nb;
    e->u.block.stmts = (Stmt **)stmts.items;
    e->u.block.nstmts = stmts.len;
    leave(p);
    return e;
}

/* ---- statements ---- */

/* `<A, B>` type parameters (variance markers `in` / `out` accepted and ignored). */
static const char **parse_type_params(Parser *p, int *n, Pos **pos) {
    PtrVec names = {0}, ps = {0};
    expect(p, P_LT, "to open the type parameters");
    while (kind(p) != P_GT) {
        if (kind(p) == K_IN || (kind(p) == T_IDENT && strcmp(peek(p)->text, "out") == 0 &&
                                peek_at(p, 1)->kind == T_IDENT))
            next(p);
        Token *t = expect(p, T_IDENT, "naming a type parameter");
        for (int k = 0; k < names.len; k++)
            if (strcmp(names.items[k], t->text) == 0)
                fail(p, t->pos, "duplicate type parameter `%s`", t->text);
        vec_push(p->a, &names, (void *)t->text);
        Pos *pp = arena_alloc(p->a, sizeof *pp);
        *pp = t->pos;
        vec_push(p->a, &ps, pp);
        if (!accept(p, P_COMMA)) break;
    }
    expect(p, P_GT, "to close the type parameters");
    *n = names.len;
    if (pos) {
        *pos = arena_alloc(p->a, sizeof(Pos) * (size_t)(ps.len + 1));
        for (int k = 0; k < ps.len; k++) (*pos)[k] = *(Pos *)ps.items[k];
    }
    return (const char **)names.items;
}

static void parse_effect_ref(Parser *p, EffectRef *r) {
    Token *t = expect(p, T_IDENT, "naming an effect");
    r->name = t->text;
    r->pos = t->pos;
    if (kind(p) == P_LT && !peek(p)->nl_before) {
        next(p);
        PtrVec args = {0};
        do vec_push(p->a, &args, parse_type(p));
        while (accept(p, P_COMMA));
        expect(p, P_GT, "to close the effect's type arguments");
        r->args = (TypeExpr **)args.items;
        r->nargs = args.len;
    }
}

static FnDecl *parse_fn_decl(Parser *p) {
    Token *kw = next(p);
    Token *name = expect(p, T_IDENT, "naming the function");
    FnDecl *fn = arena_alloc(p->a, sizeof *fn);
    fn->name = name->text;
    fn->pos = name->pos;
    fn->line = kw->pos.line;
    if (kind(p) == P_LT) fn->tparams = parse_type_params(p, &fn->ntparams, &fn->tparam_pos);
    expect(p, P_LPAREN, "after the function name");
    fn->params = parse_params(p, P_RPAREN, &fn->nparams);
    expect(p, P_RPAREN, "to close the parameters");
    if (accept(p, P_ARROW)) fn->ret_annot = parse_type(p);
    if (kind(p) == P_NOT) {
        next(p);
        fn->has_row = true;
        PtrVec refs = {0};
        if (accept(p, P_LBRACKET)) {
            while (kind(p) != P_RBRACKET) {
                EffectRef *r = arena_alloc(p->a, sizeof *r);
                parse_effect_ref(p, r);
                vec_push(p->a, &refs, r);
                if (!accept(p, P_COMMA)) break;
            }
            expect(p, P_RBRACKET, "to close the effect row");
        } else {
            EffectRef *r = arena_alloc(p->a, sizeof *r);
            parse_effect_ref(p, r);
            vec_push(p->a, &refs, r);
        }
        fn->row = arena_alloc(p->a, sizeof(EffectRef) * (size_t)(refs.len + 1));
        for (int k = 0; k < refs.len; k++) fn->row[k] = *(EffectRef *)refs.items[k];
        fn->nrow = refs.len;
    }
    if (accept(p, P_ASSIGN)) {
        fn->body = parse_expr(p);
    } else if (kind(p) == P_LBRACE) {
        fn->body = parse_block(p);
    } else {
        fail(p, peek(p)->pos, "expected `=` or `{` to begin the body of `%s`, found %s", fn->name,
             describe(peek(p)));
    }
    return fn;
}

/* `{ name: Type, ... }` fields of a record type or a named payload. */
static int parse_field_decls(Parser *p, const char ***names, TypeExpr ***types) {
    expect(p, P_LBRACE, "to open the fields");
    PtrVec ns = {0}, ts = {0};
    while (kind(p) != P_RBRACE) {
        Token *f = expect(p, T_IDENT, "naming a field");
        for (int k = 0; k < ns.len; k++)
            if (strcmp(ns.items[k], f->text) == 0) fail(p, f->pos, "duplicate field `%s`", f->text);
        expect(p, P_COLON, "after the field name");
        vec_push(p->a, &ns, (void *)f->text);
        vec_push(p->a, &ts, parse_type(p));
        if (!accept(p, P_COMMA)) break;
    }
    expect(p, P_RBRACE, "to close the fields");
    *names = (const char **)ns.items;
    *types = (TypeExpr **)ts.items;
    return ns.len;
}

static Variant *parse_variant(Parser *p, TypeDecl *td) {
    Token *t = expect(p, T_IDENT, "naming a variant");
    Variant *v = arena_alloc(p->a, sizeof *v);
    v->name = t->text;
    v->pos = t->pos;
    v->decl = td;
    if (kind(p) == P_LBRACE) {
        v->named = true;
        v->nfields = parse_field_decls(p, &v->fields, &v->ftypes);
    } else if (kind(p) == P_LPAREN && !peek(p)->nl_before) {
        next(p);
        PtrVec ts = {0};
        while (kind(p) != P_RPAREN) {
            vec_push(p->a, &ts, parse_type(p));
            if (!accept(p, P_COMMA)) break;
        }
        expect(p, P_RPAREN, "to close the variant's payload");
        v->ftypes = (TypeExpr **)ts.items;
        v->nfields = ts.len;
    }
    return v;
}

static TypeDecl *parse_type_decl(Parser *p) {
    next(p); /* type */
    Token *name = expect(p, T_IDENT, "naming the type");
    TypeDecl *td = arena_alloc(p->a, sizeof *td);
    td->name = name->text;
    td->pos = name->pos;
    if (kind(p) == P_LT) td->params = parse_type_params(p, &td->nparams, NULL);
    expect(p, P_ASSIGN, "after the type name");
    if (kind(p) == P_LBRACE) {
        td->kind = TD_RECORD;
        td->nfields = parse_field_decls(p, &td->fields, &td->ftypes);
        return td;
    }
    bool lead_bar = accept(p, P_BAR);
    Token *t = peek(p);
    Token *t1 = peek_at(p, 1);
    bool union_form =
        lead_bar || (t->kind == T_IDENT && (t1->kind == P_BAR || t1->kind == P_LBRACE ||
                                            (t1->kind == P_LPAREN && !t1->nl_before)));
    if (!union_form) {
        td->alias = parse_type(p);
        /* `type A = B` is an alias when B is a type, else a union of one variant B */
        td->kind = (td->alias->kind == TE_NAME && td->alias->nargs == 0) ? TD_NAME : TD_ALIAS;
        return td;
    }
    td->kind = TD_UNION;
    PtrVec vs = {0};
    do {
        Variant *v = parse_variant(p, td);
        for (int k = 0; k < vs.len; k++)
            if (strcmp(((Variant *)vs.items[k])->name, v->name) == 0)
                fail(p, v->pos, "duplicate variant `%s` in `%s`", v->name, td->name);
        v->tag = vs.len;
        vec_push(p->a, &vs, v);
    } while (accept(p, P_BAR));
    td->variants = (Variant **)vs.items;
    td->nvariants = vs.len;
    Variant *only = vs.len == 1 ? vs.items[0] : NULL;
    if (only && only->fields && strcmp(only->name, td->name) == 0) {
        /* docs/spec/language.md §3.3: `type P = P { x: int }` is the record `{ x: int }`
         * (positional `type Pair = Pair(int, string)` stays a one-variant union here) */
        td->kind = TD_RECORD;
        td->fields = only->fields;
        td->ftypes = only->ftypes;
        td->nfields = only->nfields;
        td->variants = NULL;
        td->nvariants = 0;
    }
    return td;
}

static EffectDecl *parse_effect_decl(Parser *p) {
    next(p); /* effect */
    Token *name = expect(p, T_IDENT, "naming the effect");
    EffectDecl *ed = arena_alloc(p->a, sizeof *ed);
    ed->name = name->text;
    ed->pos = name->pos;
    if (kind(p) == P_LT) ed->params = parse_type_params(p, &ed->nparams, NULL);
    expect(p, P_LBRACE, "to open the operations of the effect");
    PtrVec ops = {0};
    while (kind(p) != P_RBRACE) {
        Token *op = expect(p, T_IDENT, "naming an operation");
        for (int k = 0; k < ops.len; k++)
            if (strcmp(((OpDecl *)ops.items[k])->name, op->text) == 0)
                fail(p, op->pos, "duplicate operation `%s` in effect `%s`", op->text, ed->name);
        expect(p, P_COLON, "after the operation name");
        OpDecl *od = arena_alloc(p->a, sizeof *od);
        od->name = op->text;
        od->pos = op->pos;
        od->sig = parse_type(p);
        if (od->sig->kind != TE_FN)
            fail(p, od->sig->pos,
                 "the operation `%s` needs a function type, e.g. `fn(string) -> Unit`", op->text);
        vec_push(p->a, &ops, od);
        accept(p, P_COMMA);
    }
    expect(p, P_RBRACE, "to close the effect");
    ed->ops = arena_alloc(p->a, sizeof(OpDecl) * (size_t)(ops.len + 1));
    for (int k = 0; k < ops.len; k++) ed->ops[k] = *(OpDecl *)ops.items[k];
    ed->nops = ops.len;
    return ed;
}

/* Report an unsupported declaration and skip it: up to the next line that starts at
 * bracket depth 0 with something other than a continuation (`|`, `=`, a closer). */
static Stmt *parse_stmt(Parser *p, bool top) {
    Token *t = peek(p);
    switch (t->kind) {
    case K_FN:
        if (peek_at(p, 1)->kind == T_IDENT) {
            if (!top) fail(p, t->pos, "function declarations are only allowed at file scope");
            Stmt *s = stmt_new(p->a, S_FN, t->pos);
            s->u.fn = parse_fn_decl(p);
            return s;
        }
        break;
    case K_LET:
    case K_MUT: {
        next(p);
        Stmt *s = stmt_new(p->a, S_LET, t->pos);
        Token *name = expect(p, T_IDENT, "naming the binding");
        s->u.let.name = name->text;
        s->u.let.name_pos = name->pos;
        s->u.let.is_mut = t->kind == K_MUT;
        if (accept(p, P_COLON)) s->u.let.annot = parse_type(p);
        expect(p, P_ASSIGN, "in the binding");
        s->u.let.init = parse_expr(p);
        return s;
    }
    case K_TYPE: {
        if (!top) fail(p, t->pos, "type declarations are only allowed at file scope");
        Stmt *s = stmt_new(p->a, S_TYPE, t->pos);
        s->u.type = parse_type_decl(p);
        return s;
    }
    case K_EFFECT: {
        if (!top) fail(p, t->pos, "effect declarations are only allowed at file scope");
        Stmt *s = stmt_new(p->a, S_EFFECT, t->pos);
        s->u.effect = parse_effect_decl(p);
        return s;
    }
    case K_STATIC: {
        /* `static effect E { ... }` (docs/spec/language.md §12.5) */
        if (peek_at(p, 1)->kind != K_EFFECT)
            fail(p, t->pos, "`static` here must begin a `static effect` declaration");
        if (!top) fail(p, t->pos, "effect declarations are only allowed at file scope");
        next(p);
        Stmt *s = stmt_new(p->a, S_EFFECT, t->pos);
        s->u.effect = parse_effect_decl(p);
        s->u.effect->is_static = true;
        return s;
    }
    case K_EXTERN: {
        /* extern fn name(p: Type, ...) -> Ret  (docs/spec/language.md §3.5) */
        if (!top) fail(p, t->pos, "extern declarations are only allowed at file scope");
        next(p);
        if (kind(p) != K_FN) fail(p, peek(p)->pos, "expected `fn` after `extern`");
        Token *kw = next(p);
        Token *name = expect(p, T_IDENT, "naming the C function");
        FnDecl *fn = arena_alloc(p->a, sizeof *fn);
        fn->name = name->text;
        fn->pos = name->pos;
        fn->line = kw->pos.line;
        fn->is_extern = true;
        expect(p, P_LPAREN, "after the function name");
        fn->params = parse_params(p, P_RPAREN, &fn->nparams);
        expect(p, P_RPAREN, "to close the parameters");
        if (accept(p, P_ARROW)) fn->ret_annot = parse_type(p);
        Stmt *s = stmt_new(p->a, S_FN, t->pos);
        s->u.fn = fn;
        return s;
    }
    case K_IMPORT:
    case K_NAMESPACE:
    case K_MODULE:
    case K_SIGNATURE:
    case K_EXPORT: fail(p, t->pos, "modules, namespaces and imports are not part of Osprey");
    case K_OPAQUE:
    case K_STATE:
    case K_WHERE:
    case K_AS:
    case K_IN:
    case K_ELSE: fail(p, t->pos, "unexpected keyword `%s`", tok_kind_name(t->kind));
    case T_IDENT:
        if (peek_at(p, 1)->kind == P_ASSIGN) {
            Stmt *s = stmt_new(p->a, S_ASSIGN, t->pos);
            next(p);
            next(p);
            s->u.assign.name = t->text;
            s->u.assign.name_pos = t->pos;
            s->u.assign.value = parse_expr(p);
            return s;
        }
        break;
    default: break;
    }
    Stmt *s = stmt_new(p->a, S_EXPR, t->pos);
    s->u.expr = parse_expr(p);
    return s;
}

/* After an error in the statement starting at `start`, skip to the first token past
 * the error that begins a line at bracket depth 0 (relative to the statement). */
static void sync(Parser *p, int start, int err_at) {
    int depth = 0;
    int j = start;
    for (; j < p->ntoks - 1; j++) {
        Token *t = &p->toks[j];
        bool decl = t->pos.col == 1 &&
                    (t->kind == K_FN || t->kind == K_LET || t->kind == K_MUT || t->kind == K_TYPE ||
                     t->kind == K_EFFECT || t->kind == K_EXTERN || t->kind == K_STATIC);
        /* the error may have been found at the first token of the next declaration
         * (the statement before it ended there): resume right at it */
        if (j == err_at && j > start && t->nl_before && decl && depth <= 0) break;
        if (j > err_at && t->nl_before &&
            (decl ||
             (depth <= 0 && t->kind != P_RBRACE && t->kind != P_RPAREN && t->kind != P_RBRACKET)))
            break;
        if (t->kind == P_LPAREN || t->kind == P_LBRACE || t->kind == P_LBRACKET) depth++;
        if (t->kind == P_RPAREN || t->kind == P_RBRACE || t->kind == P_RBRACKET) depth--;
    }
    p->i = j;
}

/* docs/spec/language.md §3.2: a file-scope `let` whose initialiser is a lambda, the name of a
 * function, or the name of another such binding is generalised like a `fn`. It becomes one:
 * `let f = fn(x) => e` is `fn f(x) = e`, and `let h = g` (g a function of n parameters) is
 * `fn h(a0, ..., an-1) = g(a0, ..., an-1)` with parameter names no program can spell. */
static FnDecl *find_top_fn(Program *prog, const char *name) {
    for (int i = 0; i < prog->fns.len; i++) {
        FnDecl *f = prog->fns.items[i];
        if (strcmp(f->name, name) == 0) return f;
    }
    return NULL;
}

static void generalise_top_lets(Parser *p, Program *prog) {
    for (bool changed = true; changed;) {
        changed = false;
        for (int k = 0; k < prog->nstmts; k++) {
            Stmt *st = prog->stmts[k];
            if (st->kind != S_LET || st->u.let.is_mut || st->u.let.annot) continue;
            Expr *init = st->u.let.init;
            FnDecl *fn = NULL;
            if (init->kind == E_LAMBDA) {
                fn = arena_alloc(p->a, sizeof *fn);
                fn->params = init->u.lambda.params;
                fn->nparams = init->u.lambda.nparams;
                fn->ret_annot = init->u.lambda.ret;
                fn->body = init->u.lambda.body;
            } else if (init->kind == E_IDENT) {
                FnDecl *g = find_top_fn(prog, init->u.ident.name);
                if (!g || strcmp(g->name, st->u.let.name) == 0) continue;
                fn = arena_alloc(p->a, sizeof *fn);
                fn->nparams = g->nparams;
                fn->params = arena_alloc(p->a, sizeof(Param) * (size_t)(g->nparams + 1));
                Expr *call = expr_new(p->a, E_CALL, init->pos);
                call->u.call.callee = init;
                call->u.call.nargs = g->nparams;
                call->u.call.args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(g->nparams + 1));
                for (int i = 0; i < g->nparams; i++) {
                    fn->params[i].name = arena_printf(p->a, "$a%d", i);
                    fn->params[i].pos = init->pos;
                    Expr *arg = expr_new(p->a, E_IDENT, init->pos);
                    arg->u.ident.name = fn->params[i].name;
                    call->u.call.args[i] = arg;
                }
                fn->body = call;
            } else {
                continue;
            }
            if (find_top_fn(prog, st->u.let.name)) continue; /* resolution reports the clash */
            fn->name = st->u.let.name;
            fn->pos = st->u.let.name_pos;
            fn->line = st->pos.line;
            st->kind = S_FN;
            st->u.fn = fn;
            fn->id = prog->fns.len;
            vec_push(p->a, &prog->fns, fn);
            changed = true;
        }
    }
}

/* docs/spec/language.md §3.5: a line whose trimmed text starts with `// @link:` or `//@link:`
 * adds `-l<value>`, `// @linkdir:` / `//@linkdir:` adds `-L<value>`; the value is the rest of
 * the line, trimmed. Returns the number of errors (empty values). */
static int collect_link_directives(Program *prog, Diags *d, const char *src, size_t len) {
    PtrVec args = {0};
    int errors = 0, cap = 0, line = 0;
    int *lines = NULL;
    for (size_t i = 0; i < len;) {
        line++;
        size_t end = i;
        while (end < len && src[end] != '\n') end++;
        size_t a = i, b = end;
        while (a < b && (src[a] == ' ' || src[a] == '\t')) a++;
        while (b > a && (src[b - 1] == ' ' || src[b - 1] == '\t' || src[b - 1] == '\r')) b--;
        static const struct {
            const char *prefix;
            const char *flag;
        } forms[] = {
            {"// @link:", "-l"}, {"//@link:", "-l"}, {"// @linkdir:", "-L"}, {"//@linkdir:", "-L"}};
        for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
            size_t pl = strlen(forms[f].prefix);
            if ((size_t)(b - a) < pl || memcmp(src + a, forms[f].prefix, pl) != 0) continue;
            size_t v = a + pl;
            while (v < b && (src[v] == ' ' || src[v] == '\t')) v++;
            if (v == b) {
                diag_error(d, (Pos){line, (int)(a - i) + 1}, "this `%s` directive names nothing",
                           forms[f].prefix);
                errors++;
                break;
            }
            vec_push(prog->arena, &args,
                     arena_printf(prog->arena, "%s%.*s", forms[f].flag, (int)(b - v), src + v));
            if (args.len > cap) {
                cap = cap ? cap * 2 : 8;
                int *nl = arena_alloc(prog->arena, sizeof(int) * (size_t)cap);
                if (lines) memcpy(nl, lines, sizeof(int) * (size_t)(args.len - 1));
                lines = nl;
            }
            lines[args.len - 1] = line;
            break;
        }
        i = end + 1;
    }
    prog->link_args = (const char **)args.items;
    prog->link_lines = lines;
    prog->nlink_args = args.len;
    return errors;
}

/* The index just past the balanced group (`(`, `{` or `<`) that opens at toks[k]. */
static int skip_group(const Token *toks, int n, int k) {
    int depth = 0;
    for (; k < n - 1; k++) {
        TokKind t = toks[k].kind;
        if (t == P_LPAREN || t == P_LBRACE || t == P_LT)
            depth++;
        else if ((t == P_RPAREN || t == P_RBRACE || t == P_GT) && --depth == 0)
            return k + 1;
    }
    return k;
}

/* After `type Name` (toks[k] is what follows the name): push the names of the union's
 * variants (not an alias's target, `type L = List<int>` or `type A = B`). */
static void collect_variant_names(Parser *p, const Token *toks, int n, int k, PtrVec *out) {
    if (k < n && toks[k].kind == P_LT) k = skip_group(toks, n, k);
    if (k >= n || toks[k].kind != P_ASSIGN) return;
    k++;
    if (k < n && toks[k].kind == P_BAR) k++;
    PtrVec names = {0};
    bool is_union = false;
    while (k < n && toks[k].kind == T_IDENT) {
        const char *name = toks[k].text;
        k++;
        if (k < n && toks[k].kind == P_LT) break; /* a generic type: an alias */
        if (k < n && (toks[k].kind == P_LBRACE || toks[k].kind == P_LPAREN)) {
            k = skip_group(toks, n, k);
            is_union = true;
        }
        vec_push(p->a, &names, (void *)name);
        if (k < n && toks[k].kind == P_BAR) {
            is_union = true;
            k++;
            continue;
        }
        break;
    }
    if (is_union)
        for (int i = 0; i < names.len; i++) vec_push(p->a, out, names.items[i]);
}

int parse_program(Program *prog, Diags *d, const char *src, size_t len) {
    Parser P = {.a = prog->arena, .d = d, .prog = prog};
    TokenList tl = lex(prog->arena, d, src, len, (Pos){1, 1}, NULL);
    P.toks = tl.toks;
    P.ntoks = tl.len;
    /* the declared type and constructor names, so that `Box<int> { ... }` and
     * `Some<int> { value: 1 }` are known to start type arguments wherever they appear
     * (docs/spec/language.md §3.3: "a declared constructor followed by `<` always begins
     * type arguments") */
    PtrVec tnames = {0};
    for (int k = 0; k + 1 < tl.len; k++)
        if (tl.toks[k].kind == K_TYPE && tl.toks[k + 1].kind == T_IDENT) {
            vec_push(P.a, &tnames, (void *)tl.toks[k + 1].text);
            collect_variant_names(&P, tl.toks, tl.len, k + 2, &tnames);
        }
    P.type_names = (const char **)tnames.items;
    P.ntype_names = tnames.len;
    int lex_errors = d->count;
    PtrVec stmts = {0};
    jmp_buf jb;
    P.recover = &jb;
    while (P.toks[P.i].kind != T_EOF) {
        volatile int start = P.i;
        if (setjmp(jb) == 0) {
            Stmt *s = parse_stmt(&P, true);
            vec_push(P.a, &stmts, s);
            if (s->kind == S_FN) {
                s->u.fn->id = prog->fns.len;
                vec_push(P.a, &prog->fns, s->u.fn);
            }
            if (s->kind == S_TYPE) {
                s->u.type->id = prog->tdecls.len;
                vec_push(P.a, &prog->tdecls, s->u.type);
            }
            if (s->kind == S_EFFECT) vec_push(P.a, &prog->edecls, s->u.effect);
        } else {
            /* restore the file's tokens (an error may come from inside a fragment) */
            int err_at = P.toks == tl.toks ? P.i : start;
            P.toks = tl.toks;
            P.ntoks = tl.len;
            P.depth = 0;
            P.chain = 0;
            P.no_brace = false;
            sync(&P, start, err_at);
            if (d->overflow) break;
        }
    }
    prog->stmts = (Stmt **)stmts.items;
    prog->nstmts = stmts.len;
    generalise_top_lets(&P, prog);
    P.syntax_errors += collect_link_directives(prog, d, src, len);
    for (int k = 0; k < prog->nstmts; k++)
        if (prog->stmts[k]->kind == S_FN) prog->stmts[k]->u.fn->decl_index = k;
    return P.syntax_errors + lex_errors;
}
