/*
 * json_parse.h — the JSON parser behind jsonParse/jsonGet/jsonLength (docs/spec/language.md
 * §9.8), as a self-contained module: plain C, malloc/free only, no collector and no other
 * runtime file, so the libFuzzer target (test/fuzz/json_fuzz.c) links it alone. The
 * built-ins and the document-id table are in json.c.
 *
 * A parsed text is an osp_jtree: a flat array of nodes (node 0 the root value) and one pool
 * of bytes holding every decoded string, number token and object key. Nothing in it points
 * into the input, so the input may be freed after parsing.
 */
#ifndef OSP_JSON_PARSE_H
#define OSP_JSON_PARSE_H

#include <stddef.h>
#include <stdint.h>

enum osp_jkind {
    OSP_JSON_NULL,
    OSP_JSON_FALSE,
    OSP_JSON_TRUE,
    OSP_JSON_NUMBER, /* the token exactly as written */
    OSP_JSON_STRING, /* decoded: escapes resolved, \uXXXX (and surrogate pairs) as UTF-8 */
    OSP_JSON_ARRAY,
    OSP_JSON_OBJECT
};

typedef struct osp_jnode {
    uint8_t kind;    /* enum osp_jkind */
    uint32_t count;  /* ARRAY: elements, OBJECT: members (duplicates included) */
    uint32_t first;  /* ARRAY/OBJECT with count > 0: index of the first child */
    uint32_t next;   /* index of the next sibling; 0 for the last one */
    size_t text_off; /* NUMBER/STRING: bytes of pool[text_off, text_off + text_len) */
    size_t text_len; /* (also the text of true/false/null, for uniformity) */
    size_t key_off;  /* a member of an object: its decoded key in the pool */
    size_t key_len;
} osp_jnode;

typedef struct osp_jtree {
    osp_jnode *nodes; /* nodes[0] is the root value */
    size_t nnodes;
    char *pool;
    size_t pool_len;
} osp_jtree;

enum { OSP_JSON_OK = 0, OSP_JSON_INVALID = 1, OSP_JSON_NOMEM = 2 };

/*
 * Parse text[0..len) as exactly one JSON value with only whitespace (space, tab, CR, LF)
 * around it (§9.8), nested to any depth. Strings: the escapes of RFC 8259, `\uXXXX` to
 * UTF-8, a surrogate pair to one 4-byte sequence; a lone surrogate escape (no UTF-8 form) is
 * refused, as are raw bytes below 0x20; other bytes are kept as they are. Numbers: an
 * optional `-`, then a run of `0-9 . e E + -` that starts with a digit, kept as text. Returns
 * OSP_JSON_OK and stores a new tree in *out (free it with osp_jtree_free), OSP_JSON_INVALID
 * for any other text (also more than UINT32_MAX nodes or members), OSP_JSON_NOMEM when
 * malloc fails; *out is untouched on failure.
 */
int osp_jtree_parse(const char *text, size_t len, osp_jtree **out);

/* Free a tree from osp_jtree_parse (NULL is ignored). */
void osp_jtree_free(osp_jtree *t);

/*
 * The node at `path` (NUL-terminated) or -1 (§9.8): "" is the root; `.` separates object
 * keys (empty segments are skipped); `[n]` (decimal digits) indexes an array; a key
 * matches a member's decoded key exactly and the first of duplicates wins. A key applied to
 * a non-object, an index to a non-array, an index out of range or a malformed `[...]` gives
 * -1.
 */
int64_t osp_jtree_find(const osp_jtree *t, const char *path);

#endif /* OSP_JSON_PARSE_H */
