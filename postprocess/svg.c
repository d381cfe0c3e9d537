/*
 * svg.c — a self-contained interactive flame graph in one SVG file
 * (docs/spec/profiler.md §(l.6) "<stem>.svg", docs/profile-formats.md "The SVG flame graph").
 *
 * The writer is generic: it draws any tree of frames with weights (ospprof_flame), asking
 * the caller for each node's name, hover detail and colour, so other views (a differential
 * flame graph, a filtered one) reuse it. It lays the tree out once (children by name, widths
 * by weight, the root at the bottom), drops nodes narrower than `min_fraction` of the root
 * (their weight stays in the parent's width: its remainder), and writes one <rect> per frame,
 * <text> labels for the frames wide enough to carry one, a compact table of the frames'
 * names and counts, and one small embedded script for hover, click-to-zoom, reset and search.
 * Nothing is fetched: no network, no external script or font.
 *
 * Built to stay interactive at hundreds of thousands of frames: a rect carries only its
 * geometry and colour (its depth, name and counts are in the table), zooming changes one
 * transform on the frames' group instead of every rect, and labels are rebuilt only for the
 * frames wide enough to show one.
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

/* A JavaScript string literal that is also safe inside CDATA and HTML: `"` and `\` escaped,
 * control characters and `<`, `>`, `&` as \u00XX, invalid UTF-8 as U+FFFD. */
static void js_str(ospprof_buf *b, const char *str) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t n = strlen(str), i = 0;
    ospprof_buf_putc(b, '"');
    while (i < n) {
        uint32_t cp;
        size_t len = ospprof_utf8_decode(s + i, n - i, &cp);
        if (len == 0) {
            ospprof_buf_puts(b, "\\ufffd");
            i++;
            continue;
        }
        if (cp == '"' || cp == '\\') {
            ospprof_buf_putc(b, '\\');
            ospprof_buf_putc(b, (char)cp);
        } else if (ospprof_is_control(cp) || cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 ||
                   cp == 0x2029) {
            char e[6] = {
                '\\',        'u', hex[(cp >> 12) & 15], hex[(cp >> 8) & 15], hex[(cp >> 4) & 15],
                hex[cp & 15]};
            ospprof_buf_put(b, e, 6);
        } else {
            ospprof_buf_put(b, s + i, len);
        }
        i += len;
    }
    ospprof_buf_putc(b, '"');
}

/* The embedded script. The frames' rects are the children of #frames in depth-first order;
 * D.f holds four numbers per frame (depth, index into D.names, samples, self in tenths of a
 * percent) and D.names [name, detail] pairs. Everything is inside one function, so no name
 * collides with a global of the window (such as `status`). */
static const char k_script[] =
    "var W=%d,M=%d,CW=%.1f,TOP=%d,FH=%d,MAXD=%d,SPAN=W-2*M,NS='http://www.w3.org/2000/svg';\n"
    "var frames=document.getElementById('frames'),labels=document.getElementById('labels'),"
    "statusLine=document.getElementById('status'),matched=document.getElementById('matched'),"
    "reset=document.getElementById('reset'),search=document.getElementById('search');\n"
    "var R=frames.children,n=R.length,X=new Float64Array(n),WD=new Float64Array(n),"
    "DP=new Int32Array(n),HIT=new Uint8Array(n),cur=-1;\n"
    "for(var i=0;i<n;i++){var r=R[i];X[i]=(+r.getAttribute('x')-M)/SPAN;"
    "WD[i]=+r.getAttribute('width')/SPAN;DP[i]=D.f[4*i];r.__i=i;}\n"
    "function name(i){return D.names[D.f[4*i+1]][0];}\n"
    "function tip(i){var nm=D.names[D.f[4*i+1]],s=D.f[4*i+2];"
    "return nm[0]+(nm[1]?' \\u2014 '+nm[1]:'')+' \\u2014 '+s+' sample'+(s===1?'':'s')+"
    "', self '+(D.f[4*i+3]/10).toFixed(1)+'%%, total '+(WD[i]*100).toFixed(1)+'%%';}\n"
    "function fit(s,px){var room=Math.floor((px-6)/CW);if(room<3)return '';"
    "var c=Array.from(s);return c.length<=room?s:c.slice(0,room-2).join('')+'..';}\n"
    "function relabel(x0,w0,d0){while(labels.firstChild)labels.removeChild(labels.firstChild);"
    "var min=(3*CW+6)/SPAN*w0;"
    "for(var i=0;i<n;i++){if(WD[i]<min)continue;var x,w;"
    "if(DP[i]<d0){if(!(X[i]<=x0+1e-12&&X[i]+WD[i]>=x0+w0-1e-12))continue;x=0;w=1;}"
    "else{if(X[i]<x0-1e-12||X[i]+WD[i]>x0+w0+1e-12)continue;x=(X[i]-x0)/w0;w=WD[i]/w0;}"
    "var t=document.createElementNS(NS,'text');t.setAttribute('x',(M+x*SPAN+3).toFixed(2));"
    "t.setAttribute('y',TOP+(MAXD-DP[i])*FH+FH-4);t.textContent=fit(name(i),w*SPAN);"
    "labels.appendChild(t);}}\n"
    "function zoom(i){var x0=0,w0=1,d0=0;if(i!==null&&i>0){x0=X[i];w0=WD[i]||1;d0=DP[i];}"
    "cur=i;var a=1/w0,b=M-a*(M+x0*SPAN);"
    "frames.setAttribute('transform','matrix('+a+' 0 0 1 '+b+' 0)');"
    "for(var k=0;k<n;k++){var anc=DP[k]<d0&&X[k]<=x0+1e-12&&X[k]+WD[k]>=x0+w0-1e-12;"
    "if(anc!==R[k].classList.contains('anc'))R[k].classList.toggle('anc',anc);}"
    "relabel(x0,w0,d0);reset.style.display=d0>0?'':'none';}\n"
    "function find(q){var re=null;if(q){try{re=new RegExp(q,'i');}catch(e){"
    "re=new RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'),'i');}}"
    "var sum=0,end=-1;"
    "for(var i=0;i<n;i++){var hit=re!==null&&re.test(name(i))?1:0;"
    "if(hit!==HIT[i]){HIT[i]=hit;R[i].classList.toggle('hit',hit===1);}"
    "if(hit&&X[i]>=end-1e-12){sum+=WD[i];end=X[i]+WD[i];}}"
    "matched.textContent=re?'matched: '+(sum*100).toFixed(1)+'%%':'';return sum;}\n"
    "frames.addEventListener('mouseover',function(e){if(e.target.__i!==undefined)"
    "statusLine.textContent=tip(e.target.__i);});\n"
    "frames.addEventListener('mouseout',function(){statusLine.textContent='';});\n"
    "frames.addEventListener('click',function(e){if(e.target.__i!==undefined)zoom(e.target.__i);});"
    "\n"
    "reset.addEventListener('click',function(){zoom(null);});\n"
    "if(search)search.addEventListener('input',function(){find(search.value);});\n"
    "document.documentElement.__flame={zoom:zoom,find:find,count:n,tip:tip,"
    "zoomed:function(){return cur;}};\n"
    "})();\n";

static const char k_style[] =
    "text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;fill:#000}\n"
    "#frames rect{cursor:pointer;stroke:#fafafa;stroke-width:0.5px;"
    "vector-effect:non-scaling-stroke}\n"
    "#frames rect:hover{stroke:#000}\n"
    "#frames rect.hit{fill:#e040e0}\n"
    "#frames rect.anc{opacity:0.55}\n"
    "#labels{pointer-events:none}\n"
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
    double span = SVG_WIDTH - 2 * MARGIN;
    ospprof_buf_printf(b,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                       "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                       SVG_WIDTH, height, SVG_WIDTH, height);
    ospprof_buf_puts(b, "<title>");
    xml_text(b, fg->title);
    ospprof_buf_puts(b, "</title>\n<style>\n");
    ospprof_buf_puts(b, k_style);
    ospprof_buf_puts(b, "</style>\n");
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
    /* the frames: geometry and colour only */
    /* zoomed frames beyond the margins are clipped (the clip is outside the zoom transform) */
    ospprof_buf_printf(b,
                       "<clipPath id=\"frames-clip\"><rect x=\"%d\" y=\"0\" width=\"%d\" "
                       "height=\"%d\"/></clipPath>\n<g clip-path=\"url(#frames-clip)\">"
                       "<g id=\"frames\">\n",
                       MARGIN, SVG_WIDTH - 2 * MARGIN, height);
    for (size_t o = 0; o < norder; o++) {
        uint32_t v = order[o];
        double wf = total ? (double)fg->nodes[v].weight / (double)total : (v == 0 ? 1.0 : 0.0);
        char color[8] = "#c8c8c8";
        if (fg->color) fg->color(fg->ctx, v, color);
        ospprof_buf_printf(b,
                           "<rect x=\"%.4f\" y=\"%d\" width=\"%.4f\" height=\"%d\" fill=\"%s\"/>\n",
                           MARGIN + x[v] * span, TOP_H + (int)(maxdepth - depth[v]) * FRAME_H,
                           wf * span, FRAME_H, color);
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "</g></g>\n<g id=\"labels\">\n");
    for (size_t o = 0; o < norder; o++) {
        uint32_t v = order[o];
        double pw = total ? (double)fg->nodes[v].weight / (double)total * span : span;
        if ((pw - 6.0) / CHAR_W < 3) continue;
        ospprof_buf_printf(b, "<text x=\"%.2f\" y=\"%d\">", MARGIN + x[v] * span + 3,
                           TOP_H + (int)(maxdepth - depth[v]) * FRAME_H + FRAME_H - 4);
        box_label(b, fg->name(fg->ctx, v), pw);
        ospprof_buf_puts(b, "</text>\n");
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "</g>\n<script type=\"text/javascript\"><![CDATA[\n"
                        "(function(){'use strict';\nvar D={names:[");
    /* the table: [name, detail] once per distinct pair; per frame depth, name, samples, self */
    ospprof_strtab pairs = {0};
    uint32_t *pair_of = ospprof_xcalloc(norder ? norder : 1, sizeof *pair_of);
    ospprof_buf key = {0}, detail = {0};
    for (size_t o = 0; o < norder; o++) {
        uint32_t v = order[o];
        const char *name = fg->name(fg->ctx, v);
        detail.n = 0;
        if (fg->detail) fg->detail(fg->ctx, v, &detail);
        key.n = 0;
        ospprof_buf_puts(&key, name);
        ospprof_buf_putc(&key, 0);
        if (detail.n) ospprof_buf_put(&key, detail.p, detail.n);
        size_t before = pairs.n;
        pair_of[o] = ospprof_intern(&pairs, key.p, key.n);
        if (pairs.n > before) {
            if (before) ospprof_buf_putc(b, ',');
            ospprof_buf_putc(b, '[');
            js_str(b, name);
            ospprof_buf_putc(b, ',');
            js_str(b, detail.n ? detail.p : "");
            ospprof_buf_putc(b, ']');
            ospprof_out_maybe_flush(w);
        }
    }
    ospprof_buf_puts(b, "],f:[");
    for (size_t o = 0; o < norder; o++) {
        uint32_t v = order[o];
        const ospprof_flame_node *nd = &fg->nodes[v];
        uint64_t tenths = total ? (uint64_t)((double)nd->self * 1000.0 / (double)total + 0.5) : 0;
        ospprof_buf_printf(b, "%s%u,%u,%" PRIu64 ",%" PRIu64, o ? "," : "", depth[v], pair_of[o],
                           nd->samples, tenths);
        ospprof_out_maybe_flush(w);
    }
    ospprof_buf_puts(b, "]};\n");
    ospprof_buf_printf(b, k_script, SVG_WIDTH, MARGIN, CHAR_W, TOP_H, FRAME_H, (int)maxdepth);
    ospprof_buf_puts(b, "]]></script>\n</svg>\n");
    ospprof_strtab_free(&pairs);
    ospprof_buf_free(&key);
    ospprof_buf_free(&detail);
    free(pair_of);
    free(x);
    free(depth);
    free(order);
    free(kids);
    free(nchild);
    free(drawn);
}
