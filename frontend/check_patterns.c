/* check_patterns.c — patterns and `match` (see check_internal.h). */
#include "check_internal.h"

/* ---- patterns ---- */

static bool irrefutable(Pattern *p) {
    return p->kind == PAT_WILD || p->kind == PAT_BIND;
}

/* The variant that the annotation of a typed pattern `p: T` names, if T is a plain name of a
 * variant of the scrutinee's union (a scrutinee still unknown is unified with that union);
 * NULL when T is meant as a type. */
static Variant *typed_pattern_variant(Checker *c, TypeExpr *te, Type *st) {
    if (te->kind != TE_NAME || te->nargs != 0) return NULL;
    Type *s = ty_find(st);
    if (s->kind == TY_NAMED) {
        TypeDecl *td = s->decl;
        if (td->kind != TD_UNION || strcmp(td->name, te->name) == 0) return NULL;
        for (int k = 0; k < td->nvariants; k++)
            if (strcmp(td->variants[k]->name, te->name) == 0) return td->variants[k];
        return NULL;
    }
    if (s->kind != TY_VAR || s->rigid || find_tdecl(c, te->name)) return NULL;
    for (int i = 0; i < c->prog->tdecls.len; i++) {
        TypeDecl *td = c->prog->tdecls.items[i];
        if (td->kind != TD_UNION) continue;
        for (int k = 0; k < td->nvariants; k++)
            if (strcmp(td->variants[k]->name, te->name) == 0) {
                ty_unify(c->tc, s, fresh_named(c, td));
                return td->variants[k];
            }
    }
    return NULL;
}

/* docs/spec/language.md §7.1: the number of fields of a record type (declared, anonymous or
 * positional), or -1 for any other type. */
static int row_size(Type *t) {
    t = ty_find(t);
    if (t->kind == TY_RECORD) return t->nargs;
    if (t->kind == TY_NAMED && ((TypeDecl *)t->decl)->kind == TD_RECORD)
        return ((TypeDecl *)t->decl)->nfields;
    Variant *pv = positional_record(t);
    return pv ? pv->nfields : -1;
}

/* The name of field `i` of record type `t` (row_size(t) > i). */
static const char *row_field(Checker *c, Type *t, int i) {
    t = ty_find(t);
    if (t->kind == TY_RECORD) return t->fields[i];
    if (t->kind == TY_NAMED && ((TypeDecl *)t->decl)->kind == TD_RECORD)
        return ((TypeDecl *)t->decl)->fields[i];
    return arena_printf(c->a, "%d", i);
}

/* A structural or tuple pattern (§7.1) against a value of type `st`. */
static void check_struct_pattern(Checker *c, Pattern *p, Type *st) {
    TypeCtx *tc = c->tc;
    Type *s = ty_find(st);
    if (s->kind == TY_VAR && !s->rigid && !s->generic) {
        /* nothing says what the value is: a structural test reads it as an erased value */
        ty_unify(tc, s, tc->t_any);
        s = ty_find(st);
    }
    if (s->kind == TY_ANY || s->kind == TY_POISON) {
        for (int i = 0; i < p->nsubs; i++)
            if (p->subs[i]->sym) p->subs[i]->sym->type = s;
        return;
    }
    int n = row_size(s);
    if (n < 0) {
        error(c, p->pos, "a structural pattern needs a record or `any` scrutinee, not `%s`",
              show(c, s));
        for (int i = 0; i < p->nsubs; i++)
            if (p->subs[i]->sym) p->subs[i]->sym->type = tc->t_poison;
        return;
    }
    for (int i = 0; i < p->nsubs; i++) {
        int slot;
        Type *ft = inst_field(c, s, p->fields[i], &slot);
        if (!ft) {
            error(c, p->field_pos[i], "`%s` has no field `%s`", show(c, s), p->fields[i]);
            ft = tc->t_poison;
        }
        if (p->subs[i]->sym) p->subs[i]->sym->type = ft;
    }
    if (!p->open && p->nsubs < n) {
        for (int k = 0; k < n; k++) {
            const char *f = row_field(c, s, k);
            bool named = false;
            for (int i = 0; i < p->nsubs; i++)
                if (strcmp(p->fields[i], f) == 0) named = true;
            if (named) continue;
            if (p->tuple)
                error(c, p->pos, "this tuple pattern has %d slots, but `%s` has %d fields",
                      p->nsubs, show(c, s), n);
            else
                error(c, p->pos,
                      "this closed pattern omits field `%s` of `%s` (name it, or add `..`)", f,
                      show(c, s));
            break;
        }
    }
}

/* The name that describes a pattern kind that cannot read an erased `any` (§7.1), or NULL. */
static const char *refused_over_any(Pattern *p) {
    switch (p->kind) {
    case PAT_INT:
    case PAT_FLOAT:
    case PAT_STRING:
    case PAT_BOOL: return "a literal pattern";
    case PAT_LIST: return "a list pattern";
    case PAT_CTOR: return p->has_args ? "a constructor pattern" : "a variant pattern";
    case PAT_BIND: return p->annot ? "a typed pattern" : NULL;
    case PAT_SUCCESS:
    case PAT_ERROR: return p->bare ? "a variant pattern" : NULL;
    default: return NULL;
    }
}

/* Check pattern `p` against a value of type `st`, typing its binders. */
static void check_pattern(Checker *c, Pattern *p, Type *st) {
    TypeCtx *tc = c->tc;
    Type *pt = NULL;
    const char *pdesc = NULL;
    if (ty_find(st)->kind == TY_ANY) {
        const char *what = refused_over_any(p);
        if (what) {
            error(c, p->pos, "%s cannot read an erased `any`: match its structure instead", what);
            if (p->sym) p->sym->type = tc->t_poison;
            if (p->rest_sym) p->rest_sym->type = tc->t_poison;
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            p->kind = PAT_UNSUPPORTED; /* reported: no follow-ups, and codegen never sees it */
            return;
        }
    }
    switch (p->kind) {
    case PAT_STRUCT: check_struct_pattern(c, p, st); return;
    case PAT_WILD:
    case PAT_UNSUPPORTED: return;
    case PAT_BIND:
        if (p->annot) {
            /* docs/spec/language.md §7: `p: T` binds the whole value; T is the value's type or
             * one of its union's variants (then the arm tests for that variant) */
            Variant *v = typed_pattern_variant(c, p->annot, st);
            if (v) {
                if (p->sym) p->sym->type = st;
                if (v->decl->nvariants > 1) {
                    p->kind = PAT_CTOR;
                    p->variant = v;
                    p->typed = true;
                }
                return;
            }
            Type *at = convert_type(c, p->annot);
            if (!ty_unify(tc, st, at))
                error(c, p->pos, "the pattern's type `%s` does not match the value's type `%s`",
                      show(c, at), show(c, st));
        }
        if (p->sym) p->sym->type = st;
        return;
    case PAT_INT:
        pt = tc->t_int;
        pdesc = "an integer pattern";
        break;
    case PAT_FLOAT:
        pt = tc->t_float;
        pdesc = "a float pattern";
        break;
    case PAT_STRING:
        pt = tc->t_string;
        pdesc = "a string pattern";
        break;
    case PAT_BOOL:
        pt = tc->t_bool;
        pdesc = "a bool pattern";
        break;
    case PAT_SUCCESS:
    case PAT_ERROR: {
        Type *s = ty_find(st);
        if (p->bare && s->kind == TY_NAMED && ((TypeDecl *)s->decl)->kind == TD_UNION) {
            /* docs/spec/language.md §3.3: a bare `Success`/`Error` over a union that declares
             * that nullary variant is the user's variant */
            TypeDecl *td = s->decl;
            for (int k = 0; k < td->nvariants; k++)
                if (strcmp(td->variants[k]->name, p->kind == PAT_SUCCESS ? "Success" : "Error") ==
                    0) {
                    p->kind = PAT_CTOR;
                    p->variant = td->variants[k];
                    return;
                }
        }
        if (s->kind == TY_VAR && !s->rigid) {
            Type *err = ty_var(tc);
            err->hint = HINT_ERROR;
            ty_unify(tc, s, ty_result(tc, ty_var(tc), err));
            s = ty_find(st);
        }
        Type *bt;
        if (s->kind == TY_RESULT)
            bt = p->kind == PAT_SUCCESS ? s->args[0] : tc->t_string;
        else if (s->kind == TY_POISON)
            bt = tc->t_poison;
        else
            bt = p->kind == PAT_SUCCESS ? s : tc->t_string; /* a non-Result is treated as Success */
        if (p->sym) p->sym->type = bt;
        return;
    }
    case PAT_CTOR: {
        Variant *v = p->variant;
        TypeDecl *td = v->decl;
        Type *s = ty_find(st);
        if (s->kind == TY_VAR && !s->rigid) {
            ty_unify(tc, s, fresh_named(c, td));
            s = ty_find(st);
        }
        if (s->kind == TY_POISON) {
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            return;
        }
        if (s->kind != TY_NAMED || s->decl != td) {
            error(c, p->pos, "constructor `%s` (of type `%s`) cannot match a value of type `%s`",
                  v->name, td->name, show(c, st));
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            return;
        }
        if (!p->has_args) return;
        p->slots = arena_alloc(c->a, sizeof(int) * (size_t)(p->nsubs + 1));
        if (p->named) {
            if (!v->named && v->nfields > 0) {
                error(c, p->pos,
                      "constructor `%s` has a positional payload; match it with `%s(...)`", v->name,
                      v->name);
                return;
            }
            for (int i = 0; i < p->nsubs; i++) {
                int k = -1;
                for (int f = 0; f < v->nfields; f++)
                    if (strcmp(v->fields[f], p->fields[i]) == 0) k = f;
                if (k < 0) {
                    error(c, p->field_pos[i], "constructor `%s` has no field `%s`", v->name,
                          p->fields[i]);
                    check_pattern(c, p->subs[i], tc->t_poison);
                    continue;
                }
                p->slots[i] = k;
                check_pattern(c, p->subs[i],
                              inst_decl(c, td->pvars, td->nparams, s->args, v->types[k]));
            }
            return;
        }
        if (p->nsubs != v->nfields) {
            error(c, p->pos, "constructor `%s` has %d payload value%s, but the pattern has %d",
                  v->name, v->nfields, v->nfields == 1 ? "" : "s", p->nsubs);
            for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], tc->t_poison);
            return;
        }
        for (int i = 0; i < p->nsubs; i++) {
            p->slots[i] = i;
            check_pattern(c, p->subs[i],
                          inst_decl(c, td->pvars, td->nparams, s->args, v->types[i]));
        }
        return;
    }
    case PAT_LIST: {
        Type *elem = ty_var(tc);
        Type *lt = ty_con1(tc, TY_LIST, elem);
        if (!ty_unify(tc, st, lt)) {
            error(c, p->pos, "a list pattern cannot match a value of type `%s`", show(c, st));
            elem = tc->t_poison;
            lt = tc->t_poison;
        }
        for (int i = 0; i < p->nsubs; i++) check_pattern(c, p->subs[i], elem);
        if (p->rest_sym) p->rest_sym->type = lt;
        return;
    }
    }
    if (pt && !ty_unify(tc, st, pt))
        error(c, p->pos, "%s cannot match a value of type `%s`", pdesc, show(c, st));
}

/* Is every name of pattern `a` one of `b`'s? */
static bool names_within(Pattern *a, Pattern *b) {
    for (int i = 0; i < a->nsubs; i++) {
        bool found = false;
        for (int k = 0; k < b->nsubs && !found; k++)
            if (strcmp(a->fields[i], b->fields[k]) == 0) found = true;
        if (!found) return false;
    }
    return true;
}

/* docs/spec/language.md §7.1: over `any`, arm `i` (a structural pattern) is unreachable when
 * an earlier open arm names a subset of its names, or an earlier closed arm the same names
 * (and it is closed too). */
static void struct_shadowed(Checker *c, Expr *e, int i) {
    Pattern *p = e->u.match.arms[i].pat;
    for (int k = 0; k < i; k++) {
        Pattern *q = e->u.match.arms[k].pat;
        if (q->kind != PAT_STRUCT) continue;
        bool shadows =
            q->open ? names_within(q, p) : !p->open && q->nsubs == p->nsubs && names_within(q, p);
        if (!shadows) continue;
        error(c, p->pos,
              "unreachable arm: the %s pattern at line %d already matches every value this one "
              "matches",
              q->open ? "open" : "closed", q->pos.line);
        return;
    }
}

Type *check_match(Checker *c, Expr *e) {
    TypeCtx *tc = c->tc;
    Type *st = check_expr(c, e->u.match.scrut);
    Type *result = ty_var(tc);
    bool catchall = false, seen_true = false, seen_false = false, seen_ok = false, seen_err = false;
    bool catchall_typed = false;
    bool result_set = false;
    TypeDecl *covered_decl = NULL;
    bool *covered = NULL;
    bool poisoned = false;
    for (int i = 0; i < e->u.match.narms; i++) {
        MatchArm *arm = &e->u.match.arms[i];
        Pattern *p = arm->pat;
        if (catchall_typed && !catchall)
            diag_warning(c->d, p->pos, "unreachable match arm");
        else if (catchall)
            error(c, p->pos, "unreachable arm: an earlier arm already matches every value");
        check_pattern(c, p, st);
        if (p->kind == PAT_STRUCT && !catchall) {
            if (ty_find(st)->kind == TY_ANY)
                struct_shadowed(c, e, i);
            else if (row_size(st) >= 0)
                catchall = true; /* over a record it always matches (§7.1) */
        }
        if (p->kind == PAT_SUCCESS && p->sym && ty_find(st)->kind == TY_ANY)
            catchall = true; /* `Success { x }` binds the erased value itself (§7.1) */
        switch (p->kind) {
        case PAT_WILD: catchall = true; break;
        case PAT_BIND:
            /* §7: after a typed catch-all `p: T` a later arm is only a warning */
            if (p->annot)
                catchall_typed = true;
            else
                catchall = true;
            break;
        case PAT_BOOL:
            if (p->bval)
                seen_true = true;
            else
                seen_false = true;
            break;
        case PAT_SUCCESS:
        case PAT_ERROR: {
            Type *s = ty_find(st);
            if (s->kind == TY_RESULT) {
                if (p->kind == PAT_SUCCESS)
                    seen_ok = true;
                else
                    seen_err = true;
            } else if (s->kind == TY_POISON) {
                seen_ok = seen_err = true;
            } else if (p->kind == PAT_SUCCESS) {
                if (!p->sym) catchall = true;
                seen_ok = seen_err = true;
            }
            break;
        }
        case PAT_CTOR: {
            bool full = true;
            for (int k = 0; k < p->nsubs; k++)
                if (!irrefutable(p->subs[k])) full = false;
            if (full && p->variant) {
                TypeDecl *td = p->variant->decl;
                if (!covered) {
                    covered_decl = td;
                    covered = arena_alloc(c->a, sizeof(bool) * (size_t)(td->nvariants + 1));
                }
                if (td == covered_decl) covered[p->variant->tag] = true;
            }
            break;
        }
        case PAT_UNSUPPORTED:
            poisoned = true; /* already reported: no exhaustiveness or reachability follow-ups */
            break;
        default: break;
        }
        Type *bt = check_expr(c, arm->body);
        if (!result_set) {
            ty_unify(tc, result, bt);
            result_set = true;
        } else if (!ty_unify(tc, result, bt)) {
            error(c, arm->body->pos, "this arm has type `%s`, but the earlier arms have type `%s`",
                  show(c, bt), show(c, result));
        }
    }
    if (!catchall && !catchall_typed && !poisoned) {
        Type *s = ty_find(st);
        if (s->kind == TY_BOOL) {
            if (!seen_true || !seen_false)
                error(
                    c, e->pos,
                    "this `match` on `bool` does not cover `%s` (add that arm or a catch-all `_`)",
                    seen_true ? "false" : "true");
        } else if (s->kind == TY_RESULT) {
            if (!seen_ok || !seen_err)
                error(c, e->pos,
                      "this `match` on a Result does not cover `%s` (add that arm or a catch-all "
                      "`_`)",
                      seen_ok ? "Error" : "Success");
        } else if (s->kind == TY_NAMED && ((TypeDecl *)s->decl)->kind == TD_UNION) {
            TypeDecl *td = s->decl;
            for (int v = 0; v < td->nvariants; v++)
                if (!covered || covered_decl != td || !covered[v]) {
                    error(c, e->pos,
                          "this `match` on `%s` does not cover `%s` (add that arm or a catch-all "
                          "`_`)",
                          td->name, td->variants[v]->name);
                    break;
                }
        } else if (s->kind == TY_ANY) {
            error(c, e->pos, "a match over `any` is never exhaustive: add a catch-all arm");
        } else if (s->kind == TY_POISON || s->kind == TY_LIST || (seen_ok && seen_err)) {
            /* fine: list matches need no catch-all; a non-matching value is a runtime failure */
        } else {
            error(c, e->pos, "a `match` on `%s` needs a catch-all arm (`_` or a binder)",
                  show(c, s));
        }
    }
    return result;
}
