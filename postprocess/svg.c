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

/* The embedded script. D.f holds five numbers per frame in depth-first order (depth, index
 * into D.names, samples, self in tenths of a percent, weight in D.unit units of D.total);
 * D.names holds [name, detail] pairs. Positions are recomputed from the weights (siblings in
 * order from their parent's x), exactly as the C side laid them out. The frames are drawn as
 * one <path> per colour; hover, hits and dimmed ancestors are overlays in the same zoomed
 * group, and the frame under the pointer is found by a binary search in its row. Everything
 * is inside one function, so no name collides with a global of the window (`status`). */
static const char k_script[] =
    "var W=%d,M=%d,CW=%.1f,TOP=%d,FH=%d,MAXD=%d,SPAN=W-2*M,NS='http://www.w3.org/2000/svg';\n"
    "var svg=document.documentElement,frames=document.getElementById('frames'),"
    "labels=document.getElementById('labels'),hover=document.getElementById('hover'),"
    "hits=document.getElementById('hits'),anc=document.getElementById('anc'),"
    "statusLine=document.getElementById('status'),matched=document.getElementById('matched'),"
    "reset=document.getElementById('reset'),search=document.getElementById('search');\n"
    "var n=D.f.length/5,X=new Float64Array(n),WD=new Float64Array(n),DP=new Int32Array(n),"
    "LV=[],next=[],cur=null,x0=0,w0=1,d0=0;\n"
    "for(var i=0;i<n;i++){var d=D.f[5*i],w=D.f[5*i+4],x=d===0?0:next[d];next[d]=x+w;"
    "next[d+1]=x;X[i]=x/D.total;WD[i]=w/D.total;DP[i]=d;(LV[d]||(LV[d]=[])).push(i);}\n"
    "function name(i){return D.names[D.f[5*i+1]][0];}\n"
    "function tip(i){var nm=D.names[D.f[5*i+1]],s=D.f[5*i+2];"
    "return nm[0]+(nm[1]?' \\u2014 '+nm[1]:'')+' \\u2014 '+s+' sample'+(s===1?'':'s')+"
    "', self '+(D.f[5*i+3]/10).toFixed(1)+'%%, total '+(WD[i]*100).toFixed(1)+'%%';}\n"
    "var RS=new Array(n);\n"
    "function rect(i){if(RS[i])return RS[i];var x=M+X[i]*SPAN,y=TOP+(MAXD-DP[i])*FH,w=WD[i]*SPAN;"
    "return RS[i]='M'+x.toFixed(4)+' '+y+'h'+w.toFixed(4)+'v'+FH+'h'+(-w).toFixed(4)+'z';}\n"
    "function fit(s,px){var room=Math.floor((px-6)/CW);if(room<3)return '';"
    "var c=Array.from(s);return c.length<=room?s:c.slice(0,room-2).join('')+'..';}\n"
    "function isAnc(i){return DP[i]<d0&&X[i]<=x0+1e-12&&X[i]+WD[i]>=x0+w0-1e-12;}\n"
    "function relabel(){while(labels.firstChild)labels.removeChild(labels.firstChild);"
    "var min=(3*CW+6)/SPAN*w0;"
    "for(var i=0;i<n;i++){if(WD[i]<min)continue;var x,w;"
    "if(DP[i]<d0){if(!isAnc(i))continue;x=0;w=1;}"
    "else{if(X[i]<x0-1e-12||X[i]+WD[i]>x0+w0+1e-12)continue;x=(X[i]-x0)/w0;w=WD[i]/w0;}"
    "var t=document.createElementNS(NS,'text');t.setAttribute('x',(M+x*SPAN+3).toFixed(2));"
    "t.setAttribute('y',TOP+(MAXD-DP[i])*FH+FH-4);t.textContent=fit(name(i),w*SPAN);"
    "labels.appendChild(t);}}\n"
    "function zoom(i){cur=i;x0=0;w0=1;d0=0;if(i!==null&&i>0){x0=X[i];w0=WD[i]||1;d0=DP[i];}"
    "var a=1/w0,b=M-a*(M+x0*SPAN);"
    "frames.setAttribute('transform','matrix('+a+' 0 0 1 '+b+' 0)');"
    "var p=[];for(var k=0;k<n;k++)if(isAnc(k))p.push(rect(k));"
    "anc.setAttribute('d',p.join(''));hover.style.display='none';"
    "relabel();reset.style.display=d0>0?'':'none';}\n"
    "function find(q){var re=null;if(q){try{re=new RegExp(q,'i');}catch(e){"
    "re=new RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'),'i');}}"
    "var sum=0,end=-1,p=[];"
    "for(var i=0;i<n;i++){if(re===null||!re.test(name(i)))continue;p.push(rect(i));"
    "if(X[i]>=end-1e-12){sum+=WD[i];end=X[i]+WD[i];}}"
    "hits.setAttribute('d',p.join(''));"
    "matched.textContent=re?'matched: '+(sum*100).toFixed(1)+'%%':'';return sum;}\n"
    "function hit(px,py){var d=MAXD-Math.floor((py-TOP)/FH);if(py<TOP||d<0||!LV[d])return -1;"
    "var fx=x0+(px-M)/SPAN*w0;if(px<M||px>W-M)return -1;var L=LV[d],lo=0,hi=L.length-1,at=-1;"
    "while(lo<=hi){var mid=(lo+hi)>>1;if(X[L[mid]]<=fx){at=mid;lo=mid+1;}else hi=mid-1;}"
    "if(at<0)return -1;var i=L[at];if(fx>=X[i]+WD[i])return -1;"
    "if(d<d0&&!isAnc(i))return -1;return i;}\n"
    "function point(e){var p=svg.createSVGPoint();p.x=e.clientX;p.y=e.clientY;"
    "return p.matrixTransform(svg.getScreenCTM().inverse());}\n"
    "function show(i){if(i<0){hover.style.display='none';statusLine.textContent='';return;}"
    "hover.setAttribute('x',(M+X[i]*SPAN).toFixed(4));"
    "hover.setAttribute('y',TOP+(MAXD-DP[i])*FH);"
    "hover.setAttribute('width',(WD[i]*SPAN).toFixed(4));hover.style.display='';"
    "statusLine.textContent=tip(i);}\n"
    "svg.addEventListener('mousemove',function(e){var p=point(e);show(hit(p.x,p.y));});\n"
    "svg.addEventListener('mouseleave',function(){show(-1);});\n"
    "svg.addEventListener('click',function(e){if(e.target===reset||e.target===search)return;"
    "var p=point(e),i=hit(p.x,p.y);if(i>=0)zoom(i);});\n"
    "reset.addEventListener('click',function(){zoom(null);});\n"
    "if(search)search.addEventListener('input',function(){find(search.value);});\n"
    "svg.__flame={zoom:zoom,find:find,count:n,tip:tip,hit:hit,"
    "box:function(i){show(i);var r=hover.getBoundingClientRect();return {x:r.x,w:r.width};},"
    "zoomed:function(){return cur;}};\n"
    "})();\n";

static const char k_style[] =
    "text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;fill:#000}\n"
    "#frames path,#frames rect{stroke-width:0.5px;vector-effect:non-scaling-stroke}\n"
    "#frames path.f{stroke:#fafafa;cursor:pointer}\n"
    "#hits{fill:#e040e0;stroke:#fafafa}\n"
    "#anc{fill:#fafafa;fill-opacity:0.45;stroke:none}\n"
    "#hover{fill:none;stroke:#000;pointer-events:none}\n"
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
    /* the frames: one path per colour, each frame a closed rectangle subpath */
    ospprof_strtab palette = {0};
    uint32_t *color_of = ospprof_xcalloc(norder ? norder : 1, sizeof *color_of);
    for (size_t o = 0; o < norder; o++) {
        char color[8] = "#c8c8c8";
        if (fg->color) fg->color(fg->ctx, order[o], color);
        color_of[o] = ospprof_intern(&palette, color, strlen(color));
    }
    uint32_t *by_color = ospprof_xcalloc(palette.n + 1, sizeof *by_color);
    for (size_t o = 0; o < norder; o++) by_color[color_of[o] + 1]++;
    for (size_t c = 0; c < palette.n; c++) by_color[c + 1] += by_color[c];
    uint32_t *grouped = ospprof_xcalloc(norder ? norder : 1, sizeof *grouped);
    uint32_t *pos = ospprof_xcalloc(palette.n + 1, sizeof *pos);
    memcpy(pos, by_color, (palette.n + 1) * sizeof *pos);
    for (size_t o = 0; o < norder; o++) grouped[pos[color_of[o]]++] = (uint32_t)o;
    free(pos);
    ospprof_buf_printf(b,
                       "<clipPath id=\"frames-clip\"><rect x=\"%d\" y=\"0\" width=\"%d\" "
                       "height=\"%d\"/></clipPath>\n<g clip-path=\"url(#frames-clip)\">"
                       "<g id=\"frames\">\n",
                       MARGIN, SVG_WIDTH - 2 * MARGIN, height);
    for (size_t c = 0; c < palette.n; c++) {
        ospprof_buf_printf(b, "<path class=\"f\" fill=\"%s\" d=\"", palette.str[c]);
        for (uint32_t k = by_color[c]; k < by_color[c + 1]; k++) {
            size_t o = grouped[k];
            uint32_t v = order[o];
            double px = MARGIN + x[v] * span;
            double pw = total ? (double)fg->nodes[v].weight / (double)total * span : span;
            ospprof_buf_printf(b, "M%.4f %dh%.4fv%dh%.4fz", px,
                               TOP_H + (int)(maxdepth - depth[v]) * FRAME_H, pw, FRAME_H, -pw);
            ospprof_out_maybe_flush(w);
        }
        ospprof_buf_puts(b, "\"/>\n");
    }
    free(grouped);
    free(by_color);
    free(color_of);
    ospprof_strtab_free(&palette);
    ospprof_buf_printf(b,
                       "<path id=\"anc\" d=\"\"/><path id=\"hits\" d=\"\"/>"
                       "<rect id=\"hover\" x=\"0\" y=\"0\" width=\"0\" height=\"%d\" "
                       "style=\"display:none\"/>\n</g></g>\n<g id=\"labels\">\n",
                       FRAME_H);
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
    /* the table: [name, detail] once per distinct pair; per frame depth, name, samples, self,
     * weight (integers: exact sums in JavaScript up to 2^53, so weights are scaled down by a
     * power of two when the total is larger) */
    int shift = 0;
    while (shift < 63 && (total >> shift) > ((uint64_t)1 << 52)) shift++;
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
    /* the root's weight is the sum of its drawn and undrawn children; x offsets are exact
     * sums of the scaled weights, as in the layout above */
    ospprof_buf_printf(b, "],total:%" PRIu64 ",f:[", total ? total >> shift : 1);
    for (size_t o = 0; o < norder; o++) {
        uint32_t v = order[o];
        const ospprof_flame_node *nd = &fg->nodes[v];
        uint64_t tenths = total ? (uint64_t)((double)nd->self * 1000.0 / (double)total + 0.5) : 0;
        ospprof_buf_printf(b, "%s%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64, o ? "," : "", depth[v],
                           pair_of[o], nd->samples, tenths,
                           total ? nd->weight >> shift : (uint64_t)(v == 0));
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
