/* parser.c — see parser.h. */
#include "parser.h"

#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 400

typedef struct Parser {
    Arena *a;
    Diags *d;
    Program *prog;
    Token *toks;
    int ntoks;
    int i;
    int depth;
    bool no_brace;      /* inside a match scrutinee: `{` ends the expression */
    int syntax_errors;
    jmp_buf *recover;
} Parser;

static Token *peek(Parser *p) { return &p->toks[p->i]; }
static Token *peek_at(Parser *p, int k) {
    int j = p->i + k;
    return &p->toks[j < p->ntoks ? j : p->ntoks - 1];
}
static TokKind kind(Parser *p) { return p->toks[p->i].kind; }
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

static _Noreturn void fail(Parser *p, Pos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void fail(Parser *p, Pos pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(p->d, pos, fmt, ap);
    va_end(ap);
    p->syntax_errors++;
    longjmp(*p->recover, 1);
}

static Token *expect(Parser *p, TokKind k, const char *what) {
    if (kind(p) != k) fail(p, peek(p)->pos, "expected %s %s, found %s", tok_kind_name(k), what, describe(peek(p)));
    return next(p);
}

static void unsupported(Parser *p, Pos pos, const char *feature, const char *tier) {
    diag_error(p->d, pos, "not supported yet: %s (Tier %s)", feature, tier);
}

static void enter(Parser *p, Pos pos) {
    if (++p->depth > MAX_DEPTH) fail(p, pos, "expression is nested too deeply");
}
static void leave(Parser *p) { p->depth--; }

static Expr *parse_expr(Parser *p);
static Expr *unsup_expr(Parser *p, Pos pos, const char *feature, const char *tier);
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
        diag_error(p->d, t->pos, "integer literal %s%s does not fit in a 64-bit int", negative ? "-" : "", t->text);
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
    case T_INT: case T_FLOAT: case T_STRING: case T_IDENT: case K_TRUE: case K_FALSE:
    case P_LPAREN: case P_LBRACE: case P_LBRACKET: case K_FN: case P_BAR: case K_MATCH:
    case K_SPAWN: case K_AWAIT: case K_YIELD: case K_IF: case P_MINUS: case P_PLUS:
    case P_NOT: case K_PERFORM: case K_RESUME: case K_SEND: case K_RECV: case K_HANDLE:
        return true;
    default:
        return false;
    }
}

/* Parse one `${...}` fragment's source as an expression. */
static Expr *parse_fragment(Parser *p, StrPart *part) {
    int before = p->d->count;
    TokenList tl = lex(p->a, p->d, part->text, part->len, part->pos);
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

/* Skip a balanced bracket group starting at the current opening token. */
static void skip_group(Parser *p) {
    int depth = 0;
    do {
        TokKind k = kind(p);
        if (k == T_EOF) fail(p, peek(p)->pos, "unexpected end of file in pattern");
        if (k == P_LPAREN || k == P_LBRACKET || k == P_LBRACE) depth++;
        if (k == P_RPAREN || k == P_RBRACKET || k == P_RBRACE) depth--;
        next(p);
    } while (depth > 0);
}

static Pattern *parse_pattern(Parser *p) {
    Token *t = peek(p);
    Pattern *pat = arena_alloc(p->a, sizeof *pat);
    pat->pos = t->pos;
    switch (t->kind) {
    case T_INT:
        next(p);
        pat->kind = PAT_INT;
        pat->ival = int_literal(p, t, false)->u.ival;
        return pat;
    case T_FLOAT:
        next(p);
        pat->kind = PAT_FLOAT;
        pat->fval = float_literal(p, t, false)->u.fval;
        return pat;
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
        return pat;
    }
    case T_STRING:
        next(p);
        if (t->nparts != 1 || t->parts[0].is_expr) fail(p, t->pos, "a string pattern cannot contain interpolation");
        pat->kind = PAT_STRING;
        pat->sval = t->parts[0].text;
        pat->slen = t->parts[0].len;
        return pat;
    case K_TRUE:
    case K_FALSE:
        next(p);
        pat->kind = PAT_BOOL;
        pat->bval = t->kind == K_TRUE;
        return pat;
    case T_IDENT: {
        next(p);
        bool is_result = strcmp(t->text, "Success") == 0 || strcmp(t->text, "Error") == 0;
        bool is_err = strcmp(t->text, "Error") == 0;
        if (kind(p) == P_LBRACE) {
            /* named payload: Success { value } / Error { message } */
            if (!is_result) {
                unsupported(p, t->pos, "constructor patterns of user-declared types", "2");
                skip_group(p);
                pat->kind = PAT_UNSUPPORTED;
                return pat;
            }
            next(p);
            pat->kind = is_err ? PAT_ERROR : PAT_SUCCESS;
            const char *field = is_err ? "message" : "value";
            Token *f = expect(p, T_IDENT, "naming the payload field");
            if (strcmp(f->text, field) != 0)
                fail(p, f->pos, "`%s` has no field `%s` (its payload field is `%s`)", t->text, f->text, field);
            pat->name = f->text;
            pat->name_pos = f->pos;
            if (kind(p) == P_COLON) fail(p, peek(p)->pos, "field renaming in patterns is not supported");
            expect(p, P_RBRACE, "to close the pattern");
            return pat;
        }
        if (kind(p) == P_LPAREN && !peek(p)->nl_before) {
            if (!is_result) {
                unsupported(p, t->pos, "constructor patterns of user-declared types", "2");
                skip_group(p);
                pat->kind = PAT_UNSUPPORTED;
                return pat;
            }
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
                fail(p, f->pos, "expected a binder or `_` in `%s(...)`, found %s", t->text, describe(f));
            }
            expect(p, P_RPAREN, "to close the pattern");
            return pat;
        }
        if (is_result) {
            pat->kind = is_err ? PAT_ERROR : PAT_SUCCESS;
            return pat;
        }
        if (strcmp(t->text, "_") == 0) {
            pat->kind = PAT_WILD;
            return pat;
        }
        pat->kind = PAT_BIND;
        pat->name = t->text;
        pat->name_pos = t->pos;
        if (kind(p) == P_COLON) {
            next(p);
            pat->annot = parse_type(p);
        }
        return pat;
    }
    case P_LBRACKET:
        unsupported(p, t->pos, "list patterns", "2");
        skip_group(p);
        pat->kind = PAT_UNSUPPORTED;
        return pat;
    case P_LBRACE:
    case P_LPAREN:
        unsupported(p, t->pos, "structural patterns", "3");
        skip_group(p);
        pat->kind = PAT_UNSUPPORTED;
        return pat;
    default:
        fail(p, t->pos, "expected a pattern, found %s", describe(t));
    }
}

/* ---- expressions ---- */

static Param *parse_params(Parser *p, TokKind close, int *count) {
    PtrVec ps = {0};
    if (kind(p) != close) {
        do {
            Token *t = peek(p);
            if (t->kind != T_IDENT) fail(p, t->pos, "expected a parameter name, found %s", describe(t));
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
        if (e->u.lambda.nparams == 0) fail(p, t->pos, "a `|...|` lambda needs at least one parameter");
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

static Expr *unsup_expr(Parser *p, Pos pos, const char *feature, const char *tier) {
    unsupported(p, pos, feature, tier);
    Expr *e = expr_new(p->a, E_UNSUPPORTED, pos);
    e->u.unsup.feature = feature;
    return e;
}

/* Arguments of a call, after `(`. Named arguments are recognised and reported. */
static Expr **parse_args(Parser *p, int *n) {
    PtrVec args = {0};
    bool nb = p->no_brace;
    p->no_brace = false;
    if (kind(p) != P_RPAREN) {
        do {
            if (kind(p) == P_RPAREN) break; /* trailing comma */
            if (kind(p) == T_IDENT && peek_at(p, 1)->kind == P_COLON) {
                unsupported(p, peek(p)->pos, "named arguments", "2");
                next(p);
                next(p);
            }
            vec_push(p->a, &args, parse_expr(p));
        } while (accept(p, P_COMMA));
    }
    expect(p, P_RPAREN, "to close the argument list");
    p->no_brace = nb;
    *n = args.len;
    return (Expr **)args.items;
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
        if (kind(p) == T_EOF) fail(p, peek(p)->pos, "unexpected end of file in `match` (missing `}`)");
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
    bool nb = p->no_brace;
    p->no_brace = true;
    parse_expr(p);
    p->no_brace = false;
    if (kind(p) != P_LBRACE) fail(p, peek(p)->pos, "expected `{` after the `if` condition");
    parse_block(p);
    if (accept(p, K_ELSE)) {
        if (kind(p) == K_IF) parse_if(p);
        else {
            if (kind(p) != P_LBRACE) fail(p, peek(p)->pos, "expected `{` after `else`");
            parse_block(p);
        }
    }
    p->no_brace = nb;
    return unsup_expr(p, t->pos, "`if`/`else` expressions", "2");
}

static bool is_record_open(Parser *p) {
    /* `{ ident :` — record literal / update / constructor (not `::`) */
    return kind(p) == P_LBRACE && peek_at(p, 1)->kind == T_IDENT && peek_at(p, 2)->kind == P_COLON;
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
                fail(p, f->pos, "`%s` has no field `%s` (its payload field is `%s`)", t->text, f->text, field);
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
        if (!p->no_brace && is_record_open(p) && !peek(p)->nl_before) {
            skip_group(p);
            return unsup_expr(p, t->pos, "records", "2");
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
        if (kind(p) == P_COMMA) fail(p, peek(p)->pos, "tuples are not part of Osprey; expected `)`");
        expect(p, P_RPAREN, "to close the parenthesis");
        p->no_brace = nb;
        return e;
    }
    case P_LBRACE:
        if (is_record_open(p)) {
            skip_group(p);
            return unsup_expr(p, t->pos, "anonymous records", "2");
        }
        if (peek_at(p, 1)->kind == T_STRING && peek_at(p, 2)->kind == P_COLON) {
            skip_group(p);
            return unsup_expr(p, t->pos, "map literals", "2");
        }
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
    case P_BAR:
        return parse_lambda(p);
    case K_MATCH:
        return parse_match(p);
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
    case K_IF:
        return parse_if(p);
    case K_PERFORM: {
        next(p);
        expect(p, T_IDENT, "naming the effect");
        expect(p, P_DOT, "after the effect name");
        expect(p, T_IDENT, "naming the operation");
        expect(p, P_LPAREN, "after the operation");
        int n;
        parse_args(p, &n);
        return unsup_expr(p, t->pos, "effects (`perform`)", "2");
    }
    case K_RESUME: {
        next(p);
        expect(p, P_LPAREN, "after `resume`");
        int n;
        parse_args(p, &n);
        return unsup_expr(p, t->pos, "resuming effect handlers (`resume`)", "3");
    }
    case K_SEND:
    case K_RECV: {
        next(p);
        expect(p, P_LPAREN, t->kind == K_SEND ? "after `send`" : "after `recv`");
        int n;
        parse_args(p, &n);
        return unsup_expr(p, t->pos, "channels", "2");
    }
    case K_HANDLE: {
        /* skip the arms up to `in` (at bracket depth 0), then parse the handled body */
        next(p);
        int depth = 0;
        while (!(kind(p) == K_IN && depth == 0)) {
            TokKind k = kind(p);
            if (k == T_EOF) fail(p, t->pos, "expected `in` after the arms of `handle`");
            if (k == P_LPAREN || k == P_LBRACE || k == P_LBRACKET) depth++;
            if (k == P_RPAREN || k == P_RBRACE || k == P_RBRACKET) depth--;
            next(p);
        }
        next(p);
        bool nb = p->no_brace;
        p->no_brace = false;
        Expr *body = parse_expr(p);
        p->no_brace = nb;
        Expr *u = unsup_expr(p, t->pos, "effect handlers (`handle`)", "2");
        u->u.unsup.subs = arena_alloc(p->a, sizeof(Expr *));
        u->u.unsup.subs[0] = body;
        u->u.unsup.nsubs = 1;
        return u;
    }
    case K_SELECT:
        fail(p, t->pos, "`select` is reserved and not supported");
    default:
        fail(p, t->pos, "expected an expression, found %s", describe(t));
    }
}

static Expr *parse_postfix(Parser *p) {
    Expr *e = parse_primary(p);
    int chain = 0;
    for (;;) {
        Token *t = peek(p);
        if (t->kind == P_LPAREN && !t->nl_before) {
            enter(p, t->pos);
            chain++;
            next(p);
            Expr *c = expr_new(p->a, E_CALL, e->pos);
            c->u.call.callee = e;
            c->u.call.args = parse_args(p, &c->u.call.nargs);
            e = c;
            continue;
        }
        if (t->kind == P_LBRACKET && !t->ws_before) {
            enter(p, t->pos);
            chain++;
            skip_group(p);
            Expr *u = unsup_expr(p, t->pos, "indexing (`x[i]`)", "2");
            u->u.unsup.subs = arena_alloc(p->a, sizeof(Expr *));
            u->u.unsup.subs[0] = e;
            u->u.unsup.nsubs = 1;
            e = u;
            continue;
        }
        if (t->kind == P_DOT) {
            enter(p, t->pos);
            chain++;
            next(p);
            expect(p, T_IDENT, "after `.`");
            if (kind(p) == P_LPAREN && !peek(p)->nl_before) {
                next(p);
                int n;
                parse_args(p, &n);
            }
            Expr *u = unsup_expr(p, t->pos, "field access and method calls", "2");
            e = u;
            continue;
        }
        if (!p->no_brace && is_record_open(p) && !t->nl_before) {
            skip_group(p);
            e = unsup_expr(p, t->pos, "record update", "2");
            continue;
        }
        break;
    }
    while (chain-- > 0) leave(p);
    return e;
}

static Expr *parse_prefix(Parser *p) {
    Token *t = peek(p);
    enter(p, t->pos);
    Expr *e;
    if (t->kind == P_MINUS || t->kind == P_PLUS) {
        bool neg = t->kind == P_MINUS;
        next(p);
        Token *n = peek(p);
        /* a sign applied directly to a numeric literal folds into the literal */
        if (n->kind == T_INT && !(peek_at(p, 1)->kind == P_LPAREN && !peek_at(p, 1)->nl_before)) {
            next(p);
            e = int_literal(p, n, neg);
            e->pos = t->pos;
        } else if (n->kind == T_FLOAT) {
            next(p);
            e = float_literal(p, n, neg);
            e->pos = t->pos;
        } else {
            e = expr_new(p->a, E_UNARY, t->pos);
            e->u.un.op = neg ? UOP_NEG : UOP_PLUS;
            e->u.un.e = parse_prefix(p);
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
    leave(p);
    return e;
}

/* `x |> rhs`: rhs is a call (x becomes its first argument) or any callable. */
static Expr *make_pipe(Parser *p, Expr *x, Expr *rhs, Pos pos) {
    if (rhs->kind == E_CALL && !rhs->u.call.piped) {
        Expr **args = arena_alloc(p->a, sizeof(Expr *) * (size_t)(rhs->u.call.nargs + 1));
        args[0] = x;
        for (int k = 0; k < rhs->u.call.nargs; k++) args[k + 1] = rhs->u.call.args[k];
        rhs->u.call.args = args;
        rhs->u.call.nargs++;
        rhs->u.call.piped = true;
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
    Expr *l = parse_prefix(p);
    int chain = 0;
    while (kind(p) == P_PIPE) {
        Token *op = next(p);
        enter(p, op->pos);
        chain++;
        Expr *rhs;
        if ((kind(p) == K_FN && peek_at(p, 1)->kind == P_LPAREN) || kind(p) == P_BAR)
            rhs = parse_lambda(p);
        else
            rhs = parse_prefix(p);
        l = make_pipe(p, l, rhs, op->pos);
    }
    while (chain-- > 0) leave(p);
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
    Expr *l = parse_pipe(p);
    int chain = 0;
    for (;;) {
        TokKind k = kind(p);
        BinOp op;
        if (k == P_STAR) op = OP_MUL;
        else if (k == P_SLASH) op = OP_DIV;
        else if (k == P_PERCENT) op = OP_MOD;
        else break;
        Token *t = next(p);
        enter(p, t->pos);
        chain++;
        l = binary(p, op, l, parse_pipe(p), t->pos);
    }
    while (chain-- > 0) leave(p);
    return l;
}

static Expr *parse_add(Parser *p) {
    Expr *l = parse_mul(p);
    int chain = 0;
    for (;;) {
        TokKind k = kind(p);
        if (k != P_PLUS && k != P_MINUS) break;
        /* `- 1 =>` starts a negative literal pattern of the next match arm */
        TokKind k1 = peek_at(p, 1)->kind;
        if ((k1 == T_INT || k1 == T_FLOAT) && peek_at(p, 2)->kind == P_FATARROW) break;
        Token *t = next(p);
        enter(p, t->pos);
        chain++;
        l = binary(p, k == P_PLUS ? OP_ADD : OP_SUB, l, parse_mul(p), t->pos);
    }
    while (chain-- > 0) leave(p);
    return l;
}

static Expr *parse_cmp(Parser *p) {
    Expr *l = parse_add(p);
    int chain = 0;
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
        enter(p, t->pos);
        chain++;
        l = binary(p, op, l, parse_add(p), t->pos);
    }
done:
    while (chain-- > 0) leave(p);
    return l;
}

static Expr *parse_and(Parser *p) {
    Expr *l = parse_cmp(p);
    int chain = 0;
    while (kind(p) == P_AND) {
        Token *t = next(p);
        enter(p, t->pos);
        chain++;
        l = binary(p, OP_AND, l, parse_cmp(p), t->pos);
    }
    while (chain-- > 0) leave(p);
    return l;
}

static Expr *parse_or(Parser *p) {
    Expr *l = parse_and(p);
    int chain = 0;
    while (kind(p) == P_OR) {
        Token *t = next(p);
        enter(p, t->pos);
        chain++;
        l = binary(p, OP_OR, l, parse_and(p), t->pos);
    }
    while (chain-- > 0) leave(p);
    return l;
}

static Expr *parse_expr(Parser *p) {
    enter(p, peek(p)->pos);
    Expr *l = parse_or(p);
    if (kind(p) == P_ELVIS) {
        Token *t = next(p);
        Expr *e = expr_new(p->a, E_ELVIS, t->pos);
        e->u.elvis.l = l;
        e->u.elvis.r = parse_expr(p);
        l = e;
    } else if (kind(p) == P_QUESTION) {
        Token *t = next(p);
        parse_expr(p);
        expect(p, P_COLON, "in the conditional expression `c ? a : b`");
        parse_expr(p);
        l = unsup_expr(p, t->pos, "the conditional operator `c ? a : b`", "2");
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

static FnDecl *parse_fn_decl(Parser *p) {
    Token *kw = next(p);
    Token *name = expect(p, T_IDENT, "naming the function");
    FnDecl *fn = arena_alloc(p->a, sizeof *fn);
    fn->name = name->text;
    fn->pos = name->pos;
    fn->line = kw->pos.line;
    if (kind(p) == P_LT) {
        unsupported(p, peek(p)->pos, "explicit type parameters (generics)", "2");
        while (kind(p) != P_GT) {
            if (kind(p) == T_EOF || kind(p) == P_LPAREN) fail(p, peek(p)->pos, "expected `>` to close the type parameters");
            next(p);
        }
        next(p);
    }
    expect(p, P_LPAREN, "after the function name");
    fn->params = parse_params(p, P_RPAREN, &fn->nparams);
    expect(p, P_RPAREN, "to close the parameters");
    if (accept(p, P_ARROW)) fn->ret_annot = parse_type(p);
    if (kind(p) == P_NOT) {
        unsupported(p, peek(p)->pos, "effect rows (`!Effect`)", "2");
        next(p);
        if (kind(p) == P_LBRACKET) skip_group(p);
        else {
            expect(p, T_IDENT, "naming the effect");
            if (kind(p) == P_LT) {
                while (kind(p) != P_GT && kind(p) != T_EOF) next(p);
                accept(p, P_GT);
            }
        }
    }
    if (accept(p, P_ASSIGN)) {
        fn->body = parse_expr(p);
    } else if (kind(p) == P_LBRACE) {
        fn->body = parse_block(p);
    } else {
        fail(p, peek(p)->pos, "expected `=` or `{` to begin the body of `%s`, found %s", fn->name, describe(peek(p)));
    }
    return fn;
}

/* Report an unsupported declaration and skip it: up to the next line that starts at
 * bracket depth 0 with something other than a continuation (`|`, `=`, a closer). */
static Stmt *skip_unsupported_decl(Parser *p, const char *feature, const char *tier) {
    Token *t = peek(p);
    unsupported(p, t->pos, feature, tier);
    int depth = 0;
    next(p);
    while (kind(p) != T_EOF) {
        Token *k = peek(p);
        if (k->nl_before && depth <= 0 && k->kind != P_BAR && k->kind != P_ASSIGN && k->kind != P_RBRACE &&
            k->kind != P_RPAREN && k->kind != P_RBRACKET)
            break;
        if (k->kind == P_LPAREN || k->kind == P_LBRACE || k->kind == P_LBRACKET) depth++;
        if (k->kind == P_RPAREN || k->kind == P_RBRACE || k->kind == P_RBRACKET) depth--;
        next(p);
    }
    Stmt *s = stmt_new(p->a, S_UNSUPPORTED, t->pos);
    s->u.feature = feature;
    return s;
}

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
        if (t->kind == K_MUT) unsupported(p, t->pos, "`mut` bindings", "2");
        if (accept(p, P_COLON)) s->u.let.annot = parse_type(p);
        expect(p, P_ASSIGN, "in the binding");
        s->u.let.init = parse_expr(p);
        return s;
    }
    case K_TYPE:
        return skip_unsupported_decl(p, "type declarations (records, unions, aliases)", "2");
    case K_EFFECT:
        return skip_unsupported_decl(p, "effect declarations", "2");
    case K_EXTERN:
        return skip_unsupported_decl(p, "`extern` functions", "3");
    case K_IMPORT:
    case K_NAMESPACE:
    case K_MODULE:
    case K_SIGNATURE:
    case K_EXPORT:
        fail(p, t->pos, "modules, namespaces and imports are not part of Osprey");
    case K_STATIC:
    case K_OPAQUE:
    case K_STATE:
    case K_WHERE:
    case K_AS:
    case K_IN:
    case K_ELSE:
        fail(p, t->pos, "unexpected keyword `%s`", tok_kind_name(t->kind));
    case T_IDENT:
        if (peek_at(p, 1)->kind == P_ASSIGN) {
            Stmt *s = stmt_new(p->a, S_UNSUPPORTED, t->pos);
            unsupported(p, t->pos, "assignment (only effect-handler arms may assign `mut` bindings)", "2");
            next(p);
            next(p);
            parse_expr(p);
            s->u.feature = "assignment";
            return s;
        }
        break;
    default:
        break;
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
        bool decl = t->pos.col == 1 && (t->kind == K_FN || t->kind == K_LET || t->kind == K_MUT ||
                                        t->kind == K_TYPE || t->kind == K_EFFECT || t->kind == K_EXTERN);
        if (j > err_at && t->nl_before && (decl || (depth <= 0 && t->kind != P_RBRACE && t->kind != P_RPAREN && t->kind != P_RBRACKET))) break;
        if (t->kind == P_LPAREN || t->kind == P_LBRACE || t->kind == P_LBRACKET) depth++;
        if (t->kind == P_RPAREN || t->kind == P_RBRACE || t->kind == P_RBRACKET) depth--;
    }
    p->i = j;
}

int parse_program(Program *prog, Diags *d, const char *src, size_t len) {
    Parser P = {.a = prog->arena, .d = d, .prog = prog};
    TokenList tl = lex(prog->arena, d, src, len, (Pos){1, 1});
    P.toks = tl.toks;
    P.ntoks = tl.len;
    int lex_errors = d->count;
    PtrVec stmts = {0};
    jmp_buf jb;
    P.recover = &jb;
    while (P.toks[P.i].kind != T_EOF) {
        volatile int start = P.i;
        if (setjmp(jb) == 0) {
            Stmt *s = parse_stmt(&P, true);
            vec_push(P.a, &stmts, s);
            if (s->kind == S_FN) vec_push(P.a, &prog->fns, s->u.fn);
        } else {
            /* restore the file's tokens (an error may come from inside a fragment) */
            int err_at = P.toks == tl.toks ? P.i : start;
            P.toks = tl.toks;
            P.ntoks = tl.len;
            P.depth = 0;
            P.no_brace = false;
            sync(&P, start, err_at);
            if (d->overflow) break;
        }
    }
    prog->stmts = (Stmt **)stmts.items;
    prog->nstmts = stmts.len;
    for (int k = 0; k < prog->nstmts; k++)
        if (prog->stmts[k]->kind == S_FN) prog->stmts[k]->u.fn->decl_index = k;
    return P.syntax_errors + lex_errors;
}
