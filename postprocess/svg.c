/*
 * svg.c — a self-contained interactive flame graph in one SVG file
 * (docs/spec/profiler.md §(l.6) "<stem>.svg", docs/profile-formats.md "The SVG flame graph").
 *
 * The writer is generic: it draws any tree of frames with weights (ospprof_flame), asking
 * the caller for each node's name, hover detail and colour, so other views (a differential
 * flame graph, a filtered one) reuse it. It lays the tree out once (children by name, widths
 * by weight, the root at the bottom), drops nodes narrower than `min_fraction` of the root
 * (their weight stays in the parent's width: its remainder), and writes plain SVG shapes plus
 * one small embedded script for hover, click-to-zoom, reset and search. Nothing is fetched:
 * no network, no external script or font.
 *
 * Everything is iterative (no recursion proportional to the tree's depth); memory is linear
 * in the number of nodes.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { SVG_WIDTH = 1200, FRAME_H = 16, TOP_H = 40, BOTTOM_H = 28, MARGIN = 10 };
#define CHAR_W 7.0 /* average advance of the 12px monospace font, px */

/* XML text or attribute value: &, <, >, " escaped; control characters and invalid UTF-8
 * (which XML cannot carry) become U+FFFD. */
static void xml_text(ospprof_buf *b, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str), i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = ospprof_utf8_decode(s + i, n - i, &cp);
        if (len == 0 || (ospprof_is_control(cp) && cp != '\t') || cp == 0xFFFE || cp == 0xFFFF) {
            ospprof_buf_put(b, "\xEF\xBF\xBD", 3);
            i += len ? len : 1;
            continue;
        }
        switch (cp) {
        case '&': ospprof_buf_puts(b, "&amp;"); break;
        case '<': ospprof_buf_puts(b, "&lt;"); break;
        case '>': ospprof_buf_puts(b, "&gt;"); break;
        case '"': ospprof_buf_puts(b, "&quot;"); break;
        default: ospprof_buf_put(b, s + i, len);
        }
        i += len;
    }
}

/* The first `max` code points of s (all of s when it has fewer); *cut set when shortened. */
static size_t utf8_prefix_len(const char *s, size_t max, bool *cut) {
    size_t i = 0, cps = 0, n = strlen(s);
    while (i < n && cps < max) {
        unsigned c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (i + len > n) len = 1;
        i += len;
        cps++;
    }
    *cut = i < n;
    return i;
}

static size_t utf8_count(const char *s) {
    size_t k = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) k++;
    return k;
}

/* The label drawn in a box `width_px` wide: the name, or its start and "..", or nothing. */
static void box_label(ospprof_buf *b, const char *name, double width_px) {
    double room = (width_px - 6.0) / CHAR_W;
    if (room < 3) return;
    size_t fit = (size_t)room;
    if (utf8_count(name) <= fit) {
        xml_text(b, name);
        return;
    }
    bool cut;
    size_t len = utf8_prefix_len(name, fit - 2, &cut);
    char *head = ospprof_xstrndup(name, len);
    xml_text(b, head);
    free(head);
    ospprof_buf_puts(b, "..");
}

typedef struct child_key {
    const char *name;
    uint32_t node;
} child_key;

static int child_key_cmp(const void *a, const void *b) {
    const child_key *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* The embedded script: hover → status line, click → zoom, reset, search with matched %.
 * Frames are <g class="f"> in depth-first order with data-x/-w (fractions of the root),
 * data-d (depth) and data-n (the full name). */
static const char k_script[] =
    "'use strict';\n"
    "var W=" /* width */ "%d,M=%d,CW=%.1f,frames=[],status,matched,reset,search,zoomed=null;\n"
    "function label(name,w){var room=Math.floor((w-6)/CW);if(room<3)return '';"
    "var cps=Array.from(name);if(cps.length<=room)return name;"
    "return cps.slice(0,room-2).join('')+'..';}\n"
    "function place(f,x,w){var px=M+x*(W-2*M),pw=w*(W-2*M);"
    "f.r.setAttribute('x',px.toFixed(2));f.r.setAttribute('width',Math.max(pw-0.5,0).toFixed(2));"
    "f.t.setAttribute('x',(px+3).toFixed(2));f.t.textContent=label(f.n,pw);"
    "f.g.style.display=pw<0.3?'none':'';}\n"
    "function zoom(f){var x0=f?f.x:0,w0=f?f.w:1,d0=f?f.d:0;zoomed=f;"
    "for(var i=0;i<frames.length;i++){var g=frames[i];"
    "if(g.d<d0){if(g.x<=x0+1e-12&&g.x+g.w>=x0+w0-1e-12){place(g,0,1);g.g.classList.add('anc');}"
    "else{g.g.style.display='none';}continue;}"
    "g.g.classList.remove('anc');"
    "if(g.x>=x0-1e-12&&g.x+g.w<=x0+w0+1e-12)place(g,(g.x-x0)/w0,g.w/w0);"
    "else g.g.style.display='none';}"
    "reset.style.display=f&&f.d>0?'':'none';}\n"
    "function find(q){var re=null;if(q){try{re=new RegExp(q,'i');}catch(e){"
    "re=new RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'),'i');}}"
    "var sum=0,end=-1;"
    "for(var i=0;i<frames.length;i++){var f=frames[i],hit=re!==null&&re.test(f.n);"
    "f.g.classList.toggle('hit',hit);"
    "if(hit&&f.x>=end-1e-12){sum+=f.w;end=f.x+f.w;}}"
    "matched.textContent=re?'matched: '+(sum*100).toFixed(1)+'%%':'';return sum;}\n"
    "function init(){status=document.getElementById('status');"
    "matched=document.getElementById('matched');reset=document.getElementById('reset');"
    "search=document.getElementById('search');"
    "var gs=document.querySelectorAll('g.f');"
    "for(var i=0;i<gs.length;i++){var g=gs[i];"
    "var f={g:g,r:g.querySelector('rect'),t:g.querySelector('text'),"
    "x:+g.getAttribute('data-x'),w:+g.getAttribute('data-w'),d:+g.getAttribute('data-d'),"
    "n:g.getAttribute('data-n'),tip:g.querySelector('title').textContent};"
    "g.__f=f;frames.push(f);}"
    "var all=document.getElementById('frames');"
    "all.addEventListener('mouseover',function(e){var g=e.target.closest('g.f');"
    "if(g)status.textContent=g.__f.tip;});"
    "all.addEventListener('mouseout',function(){status.textContent='';});"
    "all.addEventListener('click',function(e){var g=e.target.closest('g.f');"
    "if(g)zoom(g.__f);});"
    "reset.addEventListener('click',function(){zoom(null);});"
    "if(search){search.addEventListener('input',function(){find(search.value);});}"
    "document.documentElement.__flame={zoom:function(i){zoom(i===null?null:frames[i]);},"
    "find:find,frames:frames};}\n"
    "if(document.readyState==='loading')"
    "document.addEventListener('DOMContentLoaded',init);else init();\n";

static const char k_style[] =
    "text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;fill:#000}\n"
    "g.f{cursor:pointer}\n"
    "g.f:hover rect{stroke:#000;stroke-width:0.5}\n"
    "g.f.hit rect{fill:#e040e0}\n"
    "g.f.anc rect{opacity:0.55}\n"
    "#title{font-size:16px}\n"
    "#reset{cursor:pointer;fill:#1a5fb4;text-decoration:underline}\n"
    "#search{width:240px;font:12px monospace}\n";

void ospprof_svg_flame(const ospprof_flame *fg, ospprof_out *w) {
    ospprof_buf *b = &w->b;
    size_t n = fg->nnodes;
    uint64_t total = n ? fg->nodes[0].weight : 0;
    /* drawn: the root, and nodes at least min_fraction of the root whose parent is drawn */
    uint8_t *drawn = ospprof_xcalloc(n, 1);
    uint32_t *nchild = ospprof_xcalloc(n + 1, sizeof *nchild);
    for (size_t i = 0; i < n; i++) {
        if (i == 0) {
            drawn[0] = 1;
            continue;
        }
        uint32_t par = fg->nodes[i].parent;
        if (par < n && drawn[par] && total &&
            (double)fg->nodes[i].weight >= fg->min_fraction * (double)total) {
            drawn[i] = 1;
            nchild[par + 1]++;
        }
    }
    /* children of each drawn node, sorted by name */
    for (size_t i = 0; i < n; i++) nchild[i + 1] += nchild[i];
    child_key *kids = ospprof_xcalloc(nchild[n], sizeof *kids);
    uint32_t *fill = ospprof_xcalloc(n, sizeof *fill);
    for (size_t i = 1; i < n; i++) {
        if (!drawn[i]) continue;
        uint32_t par = fg->nodes[i].parent;
        kids[nchild[par] + fill[par]++] = (child_key){fg->name(fg->ctx, i), (uint32_t)i};
    }
    free(fill);
    for (size_t i = 0; i < n; i++)
        if (nchild[i + 1] - nchild[i] > 1)
            qsort(kids + nchild[i], nchild[i + 1] - nchild[i], sizeof *kids, child_key_cmp);
    /* depth-first order (explicit stack), x offsets and depths */
    double *x = ospprof_xcalloc(n, sizeof *x);
    uint32_t *depth = ospprof_xcalloc(n, sizeof *depth);
    uint32_t *order = ospprof_xcalloc(n, sizeof *order);
    uint32_t *stack = ospprof_xcalloc(n, sizeof *stack);
    size_t norder = 0, sp = 0, maxdepth = 0;
    if (n) stack[sp++] = 0;
    while (sp) {
        uint32_t v = stack[--sp];
        order[norder++] = v;
        if (depth[v] > maxdepth) maxdepth = depth[v];
        double cx = x[v];
        for (uint32_t k = nchild[v]; k < nchild[v + 1]; k++) {
            uint32_t c = kids[k].node;
            x[c] = cx;
            depth[c] = depth[v] + 1;
            cx += total ? (double)fg->nodes[c].weight / (double)total : 0;
        }
        for (uint32_t k = nchild[v + 1]; k-- > nchild[v];) stack[sp++] = kids[k].node;
    }
    free(stack);

    int height = TOP_H + (int)(maxdepth + 1) * FRAME_H + BOTTOM_H;
    ospprof_buf_printf(b,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                       "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                       SVG_WIDTH, height, SVG_WIDTH, height);
    ospprof_buf_puts(b, "<title>");
    xml_text(b, fg->title);
    ospprof_buf_puts(b, "</title>\n<style>\n");
    ospprof_buf_puts(b, k_style);
    ospprof_buf_puts(b, "</style>\n<script type=\"text/javascript\"><![CDATA[\n");
    ospprof_buf_printf(b, k_script, SVG_WIDTH, MARGIN, CHAR_W);
    ospprof_buf_puts(b, "]]></script>\n");
    ospprof_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n",
                       SVG_WIDTH, height);
    ospprof_buf_printf(b, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
                       SVG_WIDTH / 2);
    xml_text(b, fg->title);
    ospprof_buf_puts(b, "</text>\n");
    ospprof_buf_printf(
        b, "<text id=\"reset\" x=\"%d\" y=\"24\" style=\"display:none\">Reset zoom</text>\n",
        MARGIN);
    ospprof_buf_printf(
        b,
        "<foreignObject x=\"%d\" y=\"8\" width=\"250\" height=\"26\">"
        "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
        "placeholder=\"Search (regular expression)\"/></foreignObject>\n",
        SVG_WIDTH - MARGIN - 250);
    ospprof_buf_printf(b, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n",
                       SVG_WIDTH - MARGIN, height - 10);
    ospprof_buf_printf(b, "<text id=\"status\" x=\"%d\" y=\"%d\"></text>\n", MARGIN, height - 10);
    ospprof_buf_puts(b, "<g id=\"frames\">\n");
    ospprof_buf detail = {0};
    double span = SVG_WIDTH - 2 * MARGIN;
    for (size_t o = 0; o < norder; o++) {
        uint32_t v = order[o];
        const ospprof_flame_node *nd = &fg->nodes[v];
        double wf = total ? (double)nd->weight / (double)total : (v == 0 ? 1.0 : 0.0);
        const char *name = fg->name(fg->ctx, v);
        char color[8] = "#c8c8c8";
        if (fg->color) fg->color(fg->ctx, v, color);
        detail.n = 0;
        if (fg->detail) fg->detail(fg->ctx, v, &detail);
        double px = MARGIN + x[v] * span, pw = wf * span;
        int y = TOP_H + (int)(maxdepth - depth[v]) * FRAME_H;
        ospprof_buf_printf(b,
                           "<g class=\"f\" data-x=\"%.9g\" data-w=\"%.9g\" data-d=\"%u\" data-n=\"",
                           x[v], wf, depth[v]);
        xml_text(b, name);
        ospprof_buf_puts(b, "\"><title>");
        xml_text(b, name);
        if (detail.n) {
            ospprof_buf_puts(b, " — ");
            xml_text(b, detail.p);
        }
        ospprof_buf_printf(b, " — %" PRIu64 " sample%s, self %.1f%%, total %.1f%%</title>",
                           nd->samples, nd->samples == 1 ? "" : "s",
                           total ? (double)nd->self * 100.0 / (double)total : 0.0, wf * 100.0);
        ospprof_buf_printf(b,
                           "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "rx=\"2\"/><text x=\"%.2f\" y=\"%d\">",
                           px, y, pw > 0.5 ? pw - 0.5 : 0.0, FRAME_H - 1, color, px + 3,
                           y + FRAME_H - 4);
        box_label(b, name, pw);
        ospprof_buf_puts(b, "</text></g>\n");
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_free(&detail);
    ospprof_buf_puts(b, "</g>\n</svg>\n");
    free(x);
    free(depth);
    free(order);
    free(kids);
    free(nchild);
    free(drawn);
}
