/* lexer.c — see lexer.h. */
#include "lexer.h"

#include <string.h>

static const struct {
    const char *word;
    TokKind kind;
} keywords[] = {
    {"let", K_LET},       {"mut", K_MUT},
    {"fn", K_FN},         {"extern", K_EXTERN},
    {"type", K_TYPE},     {"where", K_WHERE},
    {"effect", K_EFFECT}, {"perform", K_PERFORM},
    {"handle", K_HANDLE}, {"in", K_IN},
    {"resume", K_RESUME}, {"spawn", K_SPAWN},
    {"await", K_AWAIT},   {"yield", K_YIELD},
    {"send", K_SEND},     {"recv", K_RECV},
    {"select", K_SELECT}, {"match", K_MATCH},
    {"if", K_IF},         {"else", K_ELSE},
    {"import", K_IMPORT}, {"namespace", K_NAMESPACE},
    {"module", K_MODULE}, {"signature", K_SIGNATURE},
    {"export", K_EXPORT}, {"opaque", K_OPAQUE},
    {"state", K_STATE},   {"as", K_AS},
    {"true", K_TRUE},     {"false", K_FALSE},
    {"static", K_STATIC},
};

const char *tok_kind_name(TokKind k) {
    switch (k) {
    case T_EOF: return "end of file";
    case T_IDENT: return "identifier";
    case T_INT: return "integer literal";
    case T_FLOAT: return "float literal";
    case T_STRING: return "string literal";
    case P_PLUS: return "`+`";
    case P_MINUS: return "`-`";
    case P_STAR: return "`*`";
    case P_SLASH: return "`/`";
    case P_PERCENT: return "`%`";
    case P_EQ: return "`==`";
    case P_NE: return "`!=`";
    case P_LT: return "`<`";
    case P_GT: return "`>`";
    case P_LE: return "`<=`";
    case P_GE: return "`>=`";
    case P_AND: return "`&&`";
    case P_OR: return "`||`";
    case P_NOT: return "`!`";
    case P_PIPE: return "`|>`";
    case P_FATARROW: return "`=>`";
    case P_ARROW: return "`->`";
    case P_QUESTION: return "`?`";
    case P_COLON: return "`:`";
    case P_ELVIS: return "`?:`";
    case P_ASSIGN: return "`=`";
    case P_DOT: return "`.`";
    case P_DOTDOT: return "`..`";
    case P_COLONCOLON: return "`::`";
    case P_COMMA: return "`,`";
    case P_LPAREN: return "`(`";
    case P_RPAREN: return "`)`";
    case P_LBRACKET: return "`[`";
    case P_RBRACKET: return "`]`";
    case P_LBRACE: return "`{`";
    case P_RBRACE: return "`}`";
    case P_BAR: return "`|`";
    case P_ELLIPSIS: return "`...`";
    case T_BAD: return "invalid token";
    default:
        for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
            if (keywords[i].kind == k) return keywords[i].word;
        return "token";
    }
}

typedef struct Lexer {
    Arena *a;
    Diags *d;
    const char *src;
    size_t len, i;
    int line, col;
    int nest;       /* interpolation nesting: limits recursion in fragments */
    const Pos *map; /* a fragment's source position of each byte (and of its end), or NULL */
} Lexer;

static Pos here(const Lexer *L) {
    if (L->map) return L->map[L->i < L->len ? L->i : L->len];
    return (Pos){L->line, L->col};
}

static void advance(Lexer *L) {
    if (L->i >= L->len) return;
    if (L->src[L->i] == '\n') {
        L->line++;
        L->col = 1;
    } else {
        L->col++;
    }
    L->i++;
}

static int peekc(const Lexer *L, size_t k) {
    return L->i + k < L->len ? (unsigned char)L->src[L->i + k] : -1;
}

typedef struct Buf {
    char *p;
    size_t len, cap;
} Buf;

static void buf_put(Arena *a, Buf *b, char c) {
    if (b->len + 1 >= b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        char *p = arena_alloc(a, cap);
        if (b->len) memcpy(p, b->p, b->len);
        b->p = p;
        b->cap = cap;
    }
    b->p[b->len++] = c;
    b->p[b->len] = 0;
}

typedef struct PosBuf {
    Pos *p;
    size_t len, cap;
} PosBuf;

static void pos_put(Arena *a, PosBuf *b, Pos pos) {
    if (b->len == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        Pos *p = arena_alloc(a, sizeof *p * cap);
        if (b->len) memcpy(p, b->p, sizeof *p * b->len);
        b->p = p;
        b->cap = cap;
    }
    b->p[b->len++] = pos;
}

/* Resolve one escape after a backslash at L->i (the backslash itself). */
static void lex_escape(Lexer *L, Buf *b) {
    int c = peekc(L, 1);
    char out;
    switch (c) {
    case 'n': out = '\n'; break;
    case 'r': out = '\r'; break;
    case 't': out = '\t'; break;
    case 'e': out = 0x1b; break;
    case '0': out = 0; break;
    case '"': out = '"'; break;
    case '\\': out = '\\'; break;
    default:
        /* any other pair is kept verbatim, backslash included */
        buf_put(L->a, b, '\\');
        advance(L);
        return;
    }
    buf_put(L->a, b, out);
    advance(L);
    advance(L);
}

static void lex_string(Lexer *L, Token *t) {
    Pos open = here(L);
    advance(L); /* opening quote */
    PtrVec parts = {0};
    Buf lit = {0};
    Pos lit_pos = here(L);
    bool closed = false, frag_unclosed = false;
    while (L->i < L->len) {
        int c = peekc(L, 0);
        if (c == '"') {
            advance(L);
            closed = true;
            break;
        }
        if (c == '\\') {
            lex_escape(L, &lit);
            continue;
        }
        if (c == '$' && peekc(L, 1) == '{') {
            /* flush the literal text so far */
            if (lit.len || parts.len == 0) {
                StrPart *p = arena_alloc(L->a, sizeof *p);
                p->text = lit.p ? lit.p : "";
                p->len = lit.len;
                p->pos = lit_pos;
                vec_push(L->a, &parts, p);
            }
            lit = (Buf){0};
            Pos frag_open = here(L);
            advance(L);
            advance(L);
            Pos frag_pos = here(L);
            Buf frag = {0};
            /* where each byte of `frag` comes from, once an escape has made the fragment
             * shorter than its source (or when this text is itself mapped) */
            PosBuf fmap = {0};
            bool mapped = L->map != NULL;
            int depth = 1;
            /* When the file ends inside the fragment, the error points at the brace that
             * swallowed the rest of it: the first brace inside a nested string (the `{` of
             * `${f("{")}`), else the innermost `{` still open. */
            Pos *opens = NULL, quoted_brace = {0, 0};
            int nopens = 0, capopens = 0;
            bool in_quote = false;
            char quoted_brace_ch = '{';
            while (L->i < L->len) {
                int f = peekc(L, 0);
                if (f == '\\') {
                    if (peekc(L, 1) == '"') in_quote = !in_quote;
                    if (!mapped) {
                        /* so far each byte was one source character from frag_pos on */
                        Pos at = frag_pos;
                        for (size_t k = 0; k < frag.len; k++) {
                            pos_put(L->a, &fmap, at);
                            if (frag.p[k] == '\n') {
                                at.line++;
                                at.col = 1;
                            } else {
                                at.col++;
                            }
                        }
                        mapped = true;
                    }
                    pos_put(L->a, &fmap, here(L)); /* an escape gives one byte */
                    lex_escape(L, &frag);
                    continue;
                }
                if (f == '"') in_quote = !in_quote;
                if (in_quote && (f == '{' || f == '}') && quoted_brace.line == 0) {
                    quoted_brace = here(L);
                    quoted_brace_ch = (char)f;
                }
                if (f == '{') {
                    depth++;
                    if (nopens == capopens) {
                        capopens = capopens ? capopens * 2 : 8;
                        Pos *grown = arena_alloc(L->a, sizeof *grown * (size_t)capopens);
                        if (nopens) memcpy(grown, opens, sizeof *grown * (size_t)nopens);
                        opens = grown;
                    }
                    opens[nopens++] = here(L);
                }
                if (f == '}' && --depth == 0) break;
                if (f == '}') nopens--;
                if (mapped) pos_put(L->a, &fmap, here(L));
                buf_put(L->a, &frag, (char)f);
                advance(L);
            }
            if (depth != 0) {
                /* docs/spec/language.md §1.4: inside `${`, every `{` and `}` counts, also
                 * within a nested string; the error points at the brace left open */
                if (quoted_brace.line)
                    diag_error(L->d, quoted_brace,
                               "`%c` in a string inside `${...}` still counts as a brace, so the "
                               "`${` is never closed",
                               quoted_brace_ch);
                else if (nopens > 0)
                    diag_error(L->d, opens[nopens - 1],
                               "this `{` inside `${...}` is never closed, so the string literal "
                               "never ends");
                else
                    diag_error(L->d, frag_open, "unterminated `${` in string literal");
                frag_unclosed = true;
                break;
            }
            if (mapped) pos_put(L->a, &fmap, here(L)); /* the end: the closing brace */
            advance(L);                                /* closing brace */
            StrPart *p = arena_alloc(L->a, sizeof *p);
            p->is_expr = true;
            p->map = mapped ? fmap.p : NULL;
            p->text = frag.p ? frag.p : "";
            p->len = frag.len;
            p->pos = frag_pos;
            vec_push(L->a, &parts, p);
            lit_pos = here(L);
            continue;
        }
        buf_put(L->a, &lit, (char)c);
        advance(L);
    }
    /* an unclosed `${` has said why the literal never ends */
    if (!closed && !frag_unclosed) diag_error(L->d, open, "unterminated string literal");
    if (lit.len || parts.len == 0) {
        StrPart *p = arena_alloc(L->a, sizeof *p);
        p->text = lit.p ? lit.p : "";
        p->len = lit.len;
        p->pos = lit_pos;
        vec_push(L->a, &parts, p);
    }
    t->kind = T_STRING;
    t->nparts = parts.len;
    t->parts = arena_alloc(L->a, sizeof(StrPart) * (size_t)parts.len);
    for (int k = 0; k < parts.len; k++) t->parts[k] = *(StrPart *)parts.items[k];
}

TokenList lex(Arena *a, Diags *d, const char *src, size_t len, Pos start, const Pos *map) {
    Lexer L = {
        .a = a, .d = d, .src = src, .len = len, .line = start.line, .col = start.col, .map = map};
    Token *toks = NULL;
    int n = 0, cap = 0;
    bool nl = false, ws = false;
    int bad_run = 0;
    for (;;) {
        /* whitespace and comments */
        for (;;) {
            int c = peekc(&L, 0);
            if (c == '\n') {
                nl = ws = true;
                advance(&L);
            } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
                ws = true;
                advance(&L);
            } else if (c == '/' && peekc(&L, 1) == '/') {
                ws = true;
                while (L.i < L.len && L.src[L.i] != '\n') advance(&L);
            } else {
                break;
            }
        }
        if (n == cap) {
            int ncap = cap ? cap * 2 : 256;
            Token *nt = arena_alloc(a, sizeof(Token) * (size_t)ncap);
            if (n) memcpy(nt, toks, sizeof(Token) * (size_t)n);
            toks = nt;
            cap = ncap;
        }
        Token *t = &toks[n];
        memset(t, 0, sizeof *t);
        t->pos = here(&L);
        t->nl_before = nl;
        t->ws_before = ws;
        nl = ws = false;
        if (L.i >= L.len) {
            t->kind = T_EOF;
            n++;
            break;
        }
        int c = peekc(&L, 0);
        size_t begin = L.i;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            while (L.i < L.len) {
                int k = peekc(&L, 0);
                if ((k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || k == '_' ||
                    (k >= '0' && k <= '9'))
                    advance(&L);
                else
                    break;
            }
            t->text = arena_strndup(a, src + begin, L.i - begin);
            t->kind = T_IDENT;
            for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++)
                if (strcmp(keywords[k].word, t->text) == 0) t->kind = keywords[k].kind;
            n++;
            bad_run = 0;
            continue;
        }
        if (c >= '0' && c <= '9') {
            while (L.i < L.len && peekc(&L, 0) >= '0' && peekc(&L, 0) <= '9') advance(&L);
            t->kind = T_INT;
            if (peekc(&L, 0) == '.' && peekc(&L, 1) >= '0' && peekc(&L, 1) <= '9') {
                advance(&L);
                while (L.i < L.len && peekc(&L, 0) >= '0' && peekc(&L, 0) <= '9') advance(&L);
                t->kind = T_FLOAT;
            }
            t->text = arena_strndup(a, src + begin, L.i - begin);
            int k = peekc(&L, 0);
            if ((k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || k == '_')
                diag_error(d, here(&L), "unexpected character `%c` after number", k);
            n++;
            bad_run = 0;
            continue;
        }
        if (c == '"') {
            lex_string(&L, t);
            n++;
            bad_run = 0;
            continue;
        }
        int c1 = peekc(&L, 1), c2 = peekc(&L, 2);
        TokKind k = T_BAD;
        int w = 1;
        switch (c) {
        case '+': k = P_PLUS; break;
        case '-':
            if (c1 == '>') {
                k = P_ARROW;
                w = 2;
            } else
                k = P_MINUS;
            break;
        case '*': k = P_STAR; break;
        case '/': k = P_SLASH; break;
        case '%': k = P_PERCENT; break;
        case '=':
            if (c1 == '=') {
                k = P_EQ;
                w = 2;
            } else if (c1 == '>') {
                k = P_FATARROW;
                w = 2;
            } else
                k = P_ASSIGN;
            break;
        case '!':
            if (c1 == '=') {
                k = P_NE;
                w = 2;
            } else
                k = P_NOT;
            break;
        case '<':
            if (c1 == '=') {
                k = P_LE;
                w = 2;
            } else
                k = P_LT;
            break;
        case '>':
            if (c1 == '=') {
                k = P_GE;
                w = 2;
            } else
                k = P_GT;
            break;
        case '&':
            if (c1 == '&') {
                k = P_AND;
                w = 2;
            }
            break;
        case '|':
            if (c1 == '|') {
                k = P_OR;
                w = 2;
            } else if (c1 == '>') {
                k = P_PIPE;
                w = 2;
            } else
                k = P_BAR;
            break;
        case '?':
            if (c1 == ':') {
                k = P_ELVIS;
                w = 2;
            } else
                k = P_QUESTION;
            break;
        case ':':
            if (c1 == ':') {
                k = P_COLONCOLON;
                w = 2;
            } else
                k = P_COLON;
            break;
        case '.':
            if (c1 == '.' && c2 == '.') {
                k = P_ELLIPSIS;
                w = 3;
            } else if (c1 == '.') {
                k = P_DOTDOT;
                w = 2;
            } else
                k = P_DOT;
            break;
        case ',': k = P_COMMA; break;
        case '(': k = P_LPAREN; break;
        case ')': k = P_RPAREN; break;
        case '[': k = P_LBRACKET; break;
        case ']': k = P_RBRACKET; break;
        case '{': k = P_LBRACE; break;
        case '}': k = P_RBRACE; break;
        default: break;
        }
        if (k == T_BAD) {
            /* report one error per run of bad bytes; skip a whole UTF-8 sequence */
            if (bad_run++ == 0) {
                if (c >= 0x21 && c < 0x7f)
                    diag_error(d, t->pos, "unexpected character `%c`", c);
                else
                    diag_error(d, t->pos, "unexpected byte 0x%02x", c);
            }
            advance(&L);
            while (L.i < L.len && (peekc(&L, 0) & 0xC0) == 0x80) advance(&L);
            ws = true;
            continue;
        }
        bad_run = 0;
        for (int j = 0; j < w; j++) advance(&L);
        t->kind = k;
        n++;
    }
    return (TokenList){toks, n};
}
