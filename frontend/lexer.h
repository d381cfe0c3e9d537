/*
 * lexer.h — tokens of the Osprey brace syntax (docs/spec/language.md §1).
 *
 * The lexer turns a source buffer into an array of tokens. Each token records
 * whether a newline (nl_before) or any whitespace/comment (ws_before) separates it
 * from the previous token; the parser uses these for the three newline rules of
 * §1.1. String literals are decoded here: escapes resolved and `${...}` fragments
 * split out as separate parts (the parser lexes and parses each fragment).
 */
#ifndef OSP_FE_LEXER_H
#define OSP_FE_LEXER_H

#include "util.h"

typedef enum TokKind {
    T_EOF,
    T_IDENT,
    T_INT,
    T_FLOAT,
    T_STRING,
    /* keywords (§1.3) */
    K_LET,
    K_MUT,
    K_FN,
    K_EXTERN,
    K_TYPE,
    K_WHERE,
    K_EFFECT,
    K_PERFORM,
    K_HANDLE,
    K_IN,
    K_RESUME,
    K_SPAWN,
    K_AWAIT,
    K_YIELD,
    K_SEND,
    K_RECV,
    K_SELECT,
    K_MATCH,
    K_IF,
    K_ELSE,
    K_IMPORT,
    K_NAMESPACE,
    K_MODULE,
    K_SIGNATURE,
    K_EXPORT,
    K_OPAQUE,
    K_STATE,
    K_AS,
    K_TRUE,
    K_FALSE,
    K_STATIC,
    /* punctuation (§1.5) */
    P_PLUS,
    P_MINUS,
    P_STAR,
    P_SLASH,
    P_PERCENT,
    P_EQ,
    P_NE,
    P_LT,
    P_GT,
    P_LE,
    P_GE,
    P_AND,
    P_OR,
    P_NOT,
    P_PIPE,
    P_FATARROW,
    P_ARROW,
    P_QUESTION,
    P_COLON,
    P_ELVIS,
    P_ASSIGN,
    P_DOT,
    P_DOTDOT,
    P_COLONCOLON,
    P_COMMA,
    P_LPAREN,
    P_RPAREN,
    P_LBRACKET,
    P_RBRACKET,
    P_LBRACE,
    P_RBRACE,
    P_BAR,
    P_ELLIPSIS,
    T_BAD
} TokKind;

/* One part of a string literal: literal text, or the source of a `${...}` fragment. */
typedef struct StrPart {
    bool is_expr;
    const char *text; /* decoded text (NUL-terminated; may contain embedded NULs) */
    size_t len;
    Pos pos;        /* where the text (or the fragment's expression) starts */
    const Pos *map; /* a fragment: the source position of each byte of `text` and of its
                     * end (escapes make the text shorter than its source) */
} StrPart;

typedef struct Token {
    TokKind kind;
    Pos pos;
    const char *text; /* identifier / number spelling (NUL-terminated, arena) */
    bool nl_before;   /* a newline lies between the previous token and this one */
    bool ws_before;   /* any whitespace or comment lies between them */
    StrPart *parts;   /* T_STRING */
    int nparts;
} Token;

typedef struct TokenList {
    Token *toks;
    int len;
} TokenList;

/*
 * Lex `len` bytes of `src`, positions starting at `start` (line 1 col 1 for a file), or,
 * when `map` is given (an interpolation's fragment, StrPart.map), the position of byte i
 * is map[i]. Errors go to `d`; the list always ends with T_EOF. Tokens live in `a`.
 */
TokenList lex(Arena *a, Diags *d, const char *src, size_t len, Pos start, const Pos *map);

/* Spelling of a token kind for diagnostics, e.g. "`=>`", "identifier". */
const char *tok_kind_name(TokKind k);

#endif
