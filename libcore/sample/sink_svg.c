/* The SVG flame graph: self-contained (style and script inside), readable
 * without its script, which only shows details, zooms and searches.
 * Frames are lc_profile_label's labels and widths the folded stacks'
 * weights (lc_sink_weight), so that the graph agrees with the other text
 * formats on names and numbers.  Coordinates are formatted by
 * lc_sink_fixed, not with the locale's printf; output depends on the
 * profile only, so the same profile gives the same bytes. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sample/profile.h"
#include "sample/sink.h"

/* ---- text ------------------------------------------------------------- */

/* Characters, counting each ill-formed byte as one (it becomes U+FFFD). */
static size_t utf8_count(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = 0, len;

	for (; *u; u += len, n++)
		lc_sink_utf8_next(u, &len);
	return n;
}

/* At most max characters of s as XML character data, good in attribute
 * values too.  What XML 1.0 cannot carry even as a character reference
 * (C0 controls but tab and newlines, U+FFFE, U+FFFF) and ill-formed
 * UTF-8 become U+FFFD; tabs and newlines become spaces, which is what
 * attribute normalization would make of them anyway. */
static void xml_str(FILE *out, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t len;

	for (; *u && max; u += len, max--) {
		uint32_t c = lc_sink_utf8_next(u, &len);

		switch (c) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		case '\t':
		case '\n':
		case '\r':
			putc(' ', out);
			break;
		default:
			if (c == LC_SINK_UTF8_BAD || c < 0x20 || c == 0xfffe ||
			    c == 0xffff)
				fputs("&#xFFFD;", out);
			else
				fwrite(u, 1, len, out);
			break;
		}
	}
}

/* s in at most max characters: cut ones end in "..", and below 3 there
 * is no room for anything useful, so nothing is written.  The SVG's
 * script applies the same rule when it zooms. */
static void xml_fit(FILE *out, const char *s, size_t max)
{
	if (max < 3)
		return;
	if (utf8_count(s) <= max) {
		xml_str(out, s, max);
		return;
	}
	xml_str(out, s, max - 2);
	fputs("..", out);
}

/* ---- the flame graph ---------------------------------------------------- */

/* Labels by function.  Folded stacks merge frames by their text, so the
 * flame graph does too: functions with the same label (a native symbol
 * in two modules, say) share the first one's node and colour. */
struct labels {
	char **text;		/* lc_profile_label's, per function */
	uint32_t *canon;	/* the first function with the same label */
	uint32_t *rank;		/* the label's place in strcmp order */
	size_t n;
};

struct by_label {
	const char *label;
	uint32_t func;
};

static int by_label_cmp(const void *a, const void *b)
{
	const struct by_label *x = a, *y = b;
	int c = strcmp(x->label, y->label);

	if (c)
		return c;
	return (x->func > y->func) - (x->func < y->func);
}

static void labels_deinit(struct labels *l)
{
	for (size_t i = 0; l->text && i < l->n; i++)
		free(l->text[i]);
	free(l->text);
	free(l->canon);
	free(l->rank);
}

static int labels_init(struct labels *l, const struct lc_profile *p)
{
	char buf[LC_SINK_LABEL_MAX];
	struct by_label *v;
	size_t n = p->nfuncs, m = n ? n : 1;

	memset(l, 0, sizeof(*l));
	l->text = calloc(m, sizeof(*l->text));
	l->canon = malloc(m * sizeof(*l->canon));
	l->rank = malloc(m * sizeof(*l->rank));
	v = malloc(m * sizeof(*v));
	if (!l->text || !l->canon || !l->rank || !v)
		goto nomem;
	l->n = n;
	for (size_t i = 0; i < n; i++) {
		lc_profile_label(p, (uint32_t)i, buf, sizeof(buf));
		l->text[i] = strdup(buf);
		if (!l->text[i])
			goto nomem;
		v[i].label = l->text[i];
		v[i].func = (uint32_t)i;
	}
	qsort(v, n, sizeof(*v), by_label_cmp);
	for (size_t i = 0, first = 0, rank = 0; i < n; i++) {
		if (i && strcmp(v[i].label, v[i - 1].label) != 0) {
			first = i;
			rank++;
		}
		l->canon[v[i].func] = v[first].func;
		l->rank[v[i].func] = (uint32_t)rank;
	}
	free(v);
	return 0;
nomem:
	free(v);
	labels_deinit(l);
	errno = ENOMEM;
	return -1;
}

#define NONE	UINT32_MAX

/* A node is a stack prefix: the root ("all"), or a parent node plus one
 * more frame.  Its weight is that of every sample under the prefix. */
struct node {
	uint32_t func;		/* canonical function; NONE for the root */
	uint32_t parent;	/* NONE for the root */
	uint32_t depth;		/* 0 for the root */
	uint32_t kids;		/* first child in flame.kids */
	uint32_t nkids;
	int64_t weight;
	int64_t x;		/* weight left of it, in the root's units */
};

struct flame {
	struct node *nodes;	/* [0] is the root; a parent's id is
				   always below its children's */
	size_t n, cap;
	uint32_t *slots;	/* (parent, func) -> node id + 1, 0 = free */
	size_t nslots;		/* power of 2, kept at most half full */
	uint32_t *kids;		/* each node's children, in label order */
	uint32_t maxdepth;	/* of the drawn nodes */
	size_t omitted;		/* nodes too narrow to draw */
	int64_t total;		/* the root's weight */
};

static uint64_t node_hash(uint32_t parent, uint32_t func)
{
	uint64_t h = ((uint64_t)parent << 32 | func) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 31);
}

static void flame_put(struct flame *fl, uint32_t id)
{
	size_t m = fl->nslots - 1;
	size_t i = node_hash(fl->nodes[id].parent, fl->nodes[id].func) & m;

	while (fl->slots[i])
		i = (i + 1) & m;
	fl->slots[i] = id + 1;
}

static int flame_rehash(struct flame *fl)
{
	size_t n = fl->nslots ? fl->nslots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	free(fl->slots);
	fl->slots = s;
	fl->nslots = n;
	for (size_t i = 1; i < fl->n; i++)
		flame_put(fl, (uint32_t)i);
	return 0;
}

/* The child of parent for func, made if new; NONE when out of memory. */
static uint32_t flame_child(struct flame *fl, uint32_t parent, uint32_t func)
{
	struct node *nd;
	size_t m, i;

	if ((fl->n + 1) * 2 > fl->nslots && flame_rehash(fl) < 0)
		return NONE;
	m = fl->nslots - 1;
	for (i = node_hash(parent, func) & m; fl->slots[i]; i = (i + 1) & m) {
		nd = &fl->nodes[fl->slots[i] - 1];
		if (nd->parent == parent && nd->func == func)
			return fl->slots[i] - 1;
	}
	if (fl->n >= NONE - 1)
		return NONE;
	if (fl->n == fl->cap) {
		size_t ncap = fl->cap * 2;
		struct node *q = realloc(fl->nodes, ncap * sizeof(*q));

		if (!q)
			return NONE;
		fl->nodes = q;
		fl->cap = ncap;
	}
	nd = &fl->nodes[fl->n];
	memset(nd, 0, sizeof(*nd));
	nd->func = func;
	nd->parent = parent;
	nd->depth = fl->nodes[parent].depth + 1;
	fl->slots[i] = (uint32_t)fl->n + 1;
	return (uint32_t)fl->n++;
}

struct kid {
	uint32_t rank;		/* of the child's label */
	uint32_t node;
};

static int kid_cmp(const void *a, const void *b)
{
	const struct kid *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->node > y->node) - (x->node < y->node);
}

/* Children get contiguous runs of kids[], sorted by label as
 * flamegraph.pl sorts its input; a node's x is its parent's plus the
 * weight of the siblings before it.  One pass in id order places every
 * parent before its children, since parents have the smaller ids. */
static int flame_layout(struct flame *fl, const struct labels *l)
{
	struct kid *k = malloc(fl->n * sizeof(*k));
	size_t at = 0;

	fl->kids = malloc(fl->n * sizeof(*fl->kids));
	if (!k || !fl->kids) {
		free(k);
		return -1;
	}
	for (size_t i = 1; i < fl->n; i++)
		fl->nodes[fl->nodes[i].parent].nkids++;
	for (size_t i = 0; i < fl->n; i++) {
		fl->nodes[i].kids = (uint32_t)at;
		at += fl->nodes[i].nkids;
		fl->nodes[i].nkids = 0;
	}
	for (size_t i = 1; i < fl->n; i++) {
		struct node *pa = &fl->nodes[fl->nodes[i].parent];
		struct kid *kd = &k[pa->kids + pa->nkids++];

		kd->rank = l->rank[fl->nodes[i].func];
		kd->node = (uint32_t)i;
	}
	for (size_t i = 0; i < fl->n; i++) {
		struct node *nd = &fl->nodes[i];
		int64_t x = nd->x;

		qsort(k + nd->kids, nd->nkids, sizeof(*k), kid_cmp);
		for (uint32_t c = 0; c < nd->nkids; c++) {
			struct node *ch = &fl->nodes[k[nd->kids + c].node];

			fl->kids[nd->kids + c] = k[nd->kids + c].node;
			ch->x = x;
			x += ch->weight;
		}
	}
	free(k);
	return 0;
}

static void flame_deinit(struct flame *fl)
{
	free(fl->nodes);
	free(fl->slots);
	free(fl->kids);
}

/* Merge every sample's stack, root first, into the tree of prefixes. */
static int flame_init(struct flame *fl, const struct lc_profile *p,
		      const struct labels *l)
{
	memset(fl, 0, sizeof(*fl));
	fl->cap = 256;
	fl->nodes = calloc(fl->cap, sizeof(*fl->nodes));
	if (!fl->nodes || flame_rehash(fl) < 0)
		goto nomem;
	fl->nodes[0].func = NONE;
	fl->nodes[0].parent = NONE;
	fl->n = 1;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct lc_prof_sample *s = &p->samples[i];
		int64_t w = lc_sink_weight(p, s);
		uint32_t cur = 0;

		fl->nodes[0].weight += w;
		for (size_t k = s->nlocs; k-- > 0;) {
			uint32_t f;

			if (s->locs[k] >= p->nlocs ||
			    p->locs[s->locs[k]].func >= l->n)
				continue;
			f = l->canon[p->locs[s->locs[k]].func];
			cur = flame_child(fl, cur, f);
			if (cur == NONE)
				goto nomem;
			fl->nodes[cur].weight += w;
		}
	}
	fl->total = fl->nodes[0].weight;
	if (flame_layout(fl, l) < 0)
		goto nomem;
	return 0;
nomem:
	flame_deinit(fl);
	errno = ENOMEM;
	return -1;
}

/* Frames under a thousandth of the total are left out, as flamegraph.pl
 * leaves out those under 0.1 pixel: they cannot be read or clicked, and
 * a long profile has many thousands of them.  A child is never wider
 * than its parent, so a drawn node's parent is drawn too. */
static bool drawn(const struct flame *fl, const struct node *nd)
{
	return (double)nd->weight * 1000.0 >= (double)fl->total;
}

/* Geometry.  The frame area is FW wide and starts at XPAD; frames are
 * FRAME_H apart, the root at the bottom.  CHAR_W estimates Verdana's
 * average width at FONT_PX, as flamegraph.pl does, to cut labels. */
#define SVG_W		1200
#define XPAD		10
#define FW		(SVG_W - 2 * XPAD)
#define FRAME_H		16
#define FONT_PX		12
#define CHAR_W		7.08
#define TOP		92	/* below title, subtitles and controls */

struct rgb {
	int r, g, b;
};

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* CSS's hsl() in integers, for renderers without CSS colours.  h is in
 * [0, 360), s and l in [0, 1]; no libm, to keep the library's links. */
static struct rgb hsl(double h, double s, double l)
{
	double c = (1 - (l > 0.5 ? 2 * l - 1 : 1 - 2 * l)) * s;
	double hp = h / 60.0;
	double hm = hp - 2.0 * (int)(hp / 2.0) - 1;
	double x = c * (1 - (hm < 0 ? -hm : hm));
	double m = l - c / 2, r = 0, g = 0, b = 0;
	struct rgb out;

	if (hp < 1) {
		r = c;
		g = x;
	} else if (hp < 2) {
		r = x;
		g = c;
	} else if (hp < 3) {
		g = c;
		b = x;
	} else if (hp < 4) {
		g = x;
		b = c;
	} else if (hp < 5) {
		r = x;
		b = c;
	} else {
		r = c;
		b = x;
	}
	out.r = (int)((r + m) * 255 + 0.5);
	out.g = (int)((g + m) * 255 + 0.5);
	out.b = (int)((b + m) * 255 + 0.5);
	return out;
}

/* A hue per kind, so that one can see at a glance where Lua runs and
 * where the VM, C functions or the collector take the time; within a
 * kind, the name's hash (v1, v2 in [0, 1]; the legend uses 0.5) varies
 * shade and lightness a little, so that neighbours stay apart and a
 * function keeps its colour from one graph to the next. */
static struct rgb kind_colour(int kind, double v1, double v2)
{
	switch (kind) {
	case LC_PROF_LUA:
		return hsl(95 + 40 * v1, 0.50 + 0.15 * v2, 0.55);
	case LC_PROF_LUA_C:
		return hsl(190 + 25 * v1, 0.60, 0.60 + 0.08 * v2);
	case LC_PROF_NATIVE:
		return hsl(5 + 35 * v1, 0.75, 0.58 + 0.08 * v2);
	case LC_PROF_GC:
		return hsl(268 + 15 * v1, 0.45, 0.70);
	case LC_PROF_IDLE:
		return hsl(0, 0, 0.78);
	default:		/* the root */
		return hsl(40, 0.25, 0.80);
	}
}

static struct rgb frame_colour(const struct lc_profile *p, uint32_t func)
{
	uint32_t h;

	if (func == NONE)
		return kind_colour(-1, 0, 0);
	h = name_hash(p->funcs[func].name);
	return kind_colour(p->funcs[func].kind, (h & 0xff) / 255.0,
			   ((h >> 8) & 0xff) / 255.0);
}

static const char svg_style[] =
	"text { font-family: Verdana, 'DejaVu Sans', sans-serif; "
	"font-size: 12px; fill: rgb(0,0,0); }\n"
	"#title { font-size: 17px; }\n"
	".sub { fill: rgb(80,80,80); }\n"
	".ctl { fill: rgb(20,70,170); cursor: pointer; }\n"
	".ctl:hover { text-decoration: underline; }\n"
	".hide { display: none; }\n"
	"#frames > g { cursor: pointer; }\n"
	"#frames > g:hover > rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	"#frames text { pointer-events: none; }\n"
	"#frames > g.parent > rect { opacity: 0.5; }\n"
	"#frames > g.match > rect { fill: rgb(230,0,230); }\n";

/* The viewer.  The frames are plain SVG, readable without it; the script
 * only re-lays them out.  Each frame's <g> carries its place in weight
 * units (lc:x, lc:w) and its depth (lc:d); its <title> is
 * "label (weight, percent)".  Zoom re-lays out the clicked frame's
 * subtree to full width and its ancestors across it, and hides the rest;
 * reset restores what the file had.  Search matches a regular expression
 * (or, if it is not one, a substring) against labels and reports the
 * share of the total under any match, counting nested matches once. */
static const char svg_script[] =
	"'use strict';\n"
	"var LC = 'urn:luacore:flame', CHAR_W = 7.08;\n"
	"var xpad, fw, total, frames = [], details, matched, unzoomBtn;\n"
	"var hint = '', term = null, zoomed = null;\n"
	"\n"
	"function num(el, n) { return Number(el.getAttributeNS(LC, n)); }\n"
	"\n"
	"function init() {\n"
	"\tvar svg = document.documentElement, gs, i;\n"
	"\txpad = num(svg, 'xpad'); fw = num(svg, 'fw');\n"
	"\ttotal = num(svg, 'total');\n"
	"\tdetails = document.getElementById('details');\n"
	"\tmatched = document.getElementById('matched');\n"
	"\tunzoomBtn = document.getElementById('unzoom');\n"
	"\thint = details.textContent;\n"
	"\tgs = document.getElementById('frames').children;\n"
	"\tfor (i = 0; i < gs.length; i++) {\n"
	"\t\tvar g = gs[i], info = g.querySelector('title').textContent;\n"
	"\t\tvar r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"\t\tframes.push({ g: g, rect: r, text: t, info: info,\n"
	"\t\t\tlabel: info.substring(0, info.lastIndexOf(' (')),\n"
	"\t\t\tx: num(g, 'x'), w: num(g, 'w'), d: num(g, 'd'),\n"
	"\t\t\tx0: r.getAttribute('x'), w0: r.getAttribute('width'),\n"
	"\t\t\ttx0: t.getAttribute('x'), t0: t.textContent });\n"
	"\t\tg.lcFrame = frames[i];\n"
	"\t}\n"
	"\tvar fr = document.getElementById('frames');\n"
	"\tfr.addEventListener('mouseover', function (e) {\n"
	"\t\tvar f = frameOf(e.target);\n"
	"\t\tif (f) details.textContent = f.info;\n"
	"\t});\n"
	"\tfr.addEventListener('mouseout', function (e) {\n"
	"\t\tif (frameOf(e.target)) details.textContent = hint;\n"
	"\t});\n"
	"\tfr.addEventListener('click', function (e) {\n"
	"\t\tvar f = frameOf(e.target);\n"
	"\t\tif (f) zoom(f);\n"
	"\t});\n"
	"\tunzoomBtn.addEventListener('click', unzoom);\n"
	"\tdocument.getElementById('search').addEventListener('click',\n"
	"\t\tsearchPrompt);\n"
	"\twindow.addEventListener('keydown', function (e) {\n"
	"\t\tif (((e.ctrlKey || e.metaKey) && (e.key === 'f' ||\n"
	"\t\t    e.key === 'F')) || e.key === 'F3') {\n"
	"\t\t\te.preventDefault();\n"
	"\t\t\tsearchPrompt();\n"
	"\t\t} else if (e.key === 'Escape') {\n"
	"\t\t\tunzoom();\n"
	"\t\t\tsearch('');\n"
	"\t\t}\n"
	"\t});\n"
	"}\n"
	"\n"
	"function frameOf(el) {\n"
	"\tfor (; el && el !== document; el = el.parentNode)\n"
	"\t\tif (el.lcFrame) return el.lcFrame;\n"
	"\treturn null;\n"
	"}\n"
	"\n"
	"/* The file's rule: at most (w - 6) / CHAR_W characters, cut ones\n"
	" * ending in '..', nothing below 3. */\n"
	"function fit(label, w) {\n"
	"\tvar cs = Array.from(label), max = Math.floor((w - 6) / CHAR_W);\n"
	"\tif (max < 3) return '';\n"
	"\tif (cs.length <= max) return label;\n"
	"\treturn cs.slice(0, max - 2).join('') + '..';\n"
	"}\n"
	"\n"
	"function place(f, x, w) {\n"
	"\tf.rect.setAttribute('x', x.toFixed(2));\n"
	"\tf.rect.setAttribute('width', w.toFixed(2));\n"
	"\tf.text.setAttribute('x', (x + 3).toFixed(2));\n"
	"\tf.text.textContent = fit(f.label, w);\n"
	"\tf.g.style.display = '';\n"
	"}\n"
	"\n"
	"function zoom(z) {\n"
	"\tvar scale = fw / z.w, i, f;\n"
	"\tif (z.d === 0) { unzoom(); return; }\n"
	"\tfor (i = 0; i < frames.length; i++) {\n"
	"\t\tf = frames[i];\n"
	"\t\tif (f.d >= z.d && f.x >= z.x && f.x + f.w <= z.x + z.w) {\n"
	"\t\t\tplace(f, xpad + (f.x - z.x) * scale, f.w * scale);\n"
	"\t\t\tf.g.classList.remove('parent');\n"
	"\t\t} else if (f.d < z.d && f.x <= z.x && f.x + f.w >= z.x + z.w) {\n"
	"\t\t\tplace(f, xpad, fw);\n"
	"\t\t\tf.g.classList.add('parent');\n"
	"\t\t} else {\n"
	"\t\t\tf.g.style.display = 'none';\n"
	"\t\t}\n"
	"\t}\n"
	"\tzoomed = z;\n"
	"\tunzoomBtn.classList.remove('hide');\n"
	"}\n"
	"\n"
	"function unzoom() {\n"
	"\tfor (var i = 0; i < frames.length; i++) {\n"
	"\t\tvar f = frames[i];\n"
	"\t\tf.rect.setAttribute('x', f.x0);\n"
	"\t\tf.rect.setAttribute('width', f.w0);\n"
	"\t\tf.text.setAttribute('x', f.tx0);\n"
	"\t\tf.text.textContent = f.t0;\n"
	"\t\tf.g.style.display = '';\n"
	"\t\tf.g.classList.remove('parent');\n"
	"\t}\n"
	"\tzoomed = null;\n"
	"\tunzoomBtn.classList.add('hide');\n"
	"}\n"
	"\n"
	"function searchPrompt() {\n"
	"\tvar s = window.prompt('Search frames (regular expression; '\n"
	"\t\t+ 'empty to clear):', term || '');\n"
	"\tif (s !== null) search(s);\n"
	"}\n"
	"\n"
	"function search(s) {\n"
	"\tvar re = null, spans = [], n = 0, sum = 0, end = -1, i, f, hit;\n"
	"\tterm = s ? s : null;\n"
	"\tif (term) {\n"
	"\t\ttry { re = new RegExp(term); } catch (e) { re = null; }\n"
	"\t}\n"
	"\tfor (i = 0; i < frames.length; i++) {\n"
	"\t\tf = frames[i];\n"
	"\t\thit = term !== null && f.d > 0 && (re ? re.test(f.label)\n"
	"\t\t\t: f.label.indexOf(term) >= 0);\n"
	"\t\tf.g.classList.toggle('match', hit);\n"
	"\t\tif (hit) { spans.push([f.x, f.x + f.w]); n++; }\n"
	"\t}\n"
	"\tif (!term) { matched.textContent = ''; return; }\n"
	"\tspans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"\tfor (i = 0; i < spans.length; i++) {\n"
	"\t\tif (spans[i][1] <= end) continue;\n"
	"\t\tsum += spans[i][1] - Math.max(spans[i][0], end);\n"
	"\t\tend = spans[i][1];\n"
	"\t}\n"
	"\tmatched.textContent = 'Matched: ' +\n"
	"\t\t(total ? 100 * sum / total : 0).toFixed(2) + '% (' + n +\n"
	"\t\t(n === 1 ? ' frame)' : ' frames)');\n"
	"}\n";

/* "label (1,234 us, 12.34%)" */
static void frame_title(const struct lc_profile *p, const struct flame *fl,
			const char *label, int64_t w, FILE *out)
{
	char n[32], pct[32];

	xml_str(out, label, SIZE_MAX);
	fprintf(out, " (%s %s, %s%%)", lc_sink_grouped(n, sizeof(n), w),
		p->at ? "calls" : p->alloc ? "bytes" : "us",
		lc_sink_fixed(pct, sizeof(pct),
		      fl->total ? 100.0 * (double)w / (double)fl->total : 0,
		      2));
}

static void svg_frame(const struct lc_profile *p, const struct flame *fl,
		      const struct labels *l, const struct node *nd, FILE *out)
{
	/* Pixels from weights as the script computes them when it zooms;
	 * its reset puts back these very attributes. */
	double scale = fl->total ? (double)FW / (double)fl->total : 0;
	double x = XPAD + (double)nd->x * scale;
	double w = fl->total ? (double)nd->weight * scale : FW;
	int y = TOP + (int)(fl->maxdepth - nd->depth) * FRAME_H;
	const char *label = nd->func == NONE ? "all" : l->text[nd->func];
	struct rgb c = frame_colour(p, nd->func);
	char bx[32], bw[32], tx[32];

	fprintf(out, "<g lc:x=\"%" PRId64 "\" lc:w=\"%" PRId64
		"\" lc:d=\"%" PRIu32 "\"><title>", nd->x, nd->weight,
		nd->depth);
	frame_title(p, fl, label, nd->weight, out);
	fprintf(out, "</title><rect x=\"%s\" y=\"%d\" width=\"%s\" "
		"height=\"%d\" rx=\"2\" ry=\"2\" fill=\"rgb(%d,%d,%d)\"/>"
		"<text x=\"%s\" y=\"%d\">",
		lc_sink_fixed(bx, sizeof(bx), x, 2), y,
		lc_sink_fixed(bw, sizeof(bw), w, 2), FRAME_H - 1, c.r, c.g, c.b,
		lc_sink_fixed(tx, sizeof(tx), x + 3, 2), y + FRAME_H - 5);
	if (w > 6)
		xml_fit(out, label, (size_t)((w - 6) / CHAR_W));
	fputs("</text></g>\n", out);
}

static void svg_legend(FILE *out, int y)
{
	static const struct {
		int kind;
		const char *what;
	} items[] = {
		{ LC_PROF_LUA, "Lua" },
		{ LC_PROF_LUA_C, "C function from Lua" },
		{ LC_PROF_NATIVE, "native (host, VM)" },
		{ LC_PROF_GC, "GC" },
		{ LC_PROF_IDLE, "idle" },
	};
	const size_t n = sizeof(items) / sizeof(items[0]);
	double width = 0, x;

	for (size_t i = 0; i < n; i++)
		width += 16 + strlen(items[i].what) * CHAR_W + 18;
	x = (SVG_W - width) / 2;
	fputs("<g id=\"legend\">\n", out);
	for (size_t i = 0; i < n; i++) {
		struct rgb c = kind_colour(items[i].kind, 0.5, 0.5);
		char bx[32], tx[32];

		fprintf(out, "<rect x=\"%s\" y=\"%d\" width=\"12\" "
			"height=\"12\" rx=\"2\" ry=\"2\" fill=\"rgb(%d,%d,%d)\"/>"
			"<text class=\"sub\" x=\"%s\" y=\"%d\">%s</text>\n",
			lc_sink_fixed(bx, sizeof(bx), x, 1), y - 10, c.r, c.g,
			c.b, lc_sink_fixed(tx, sizeof(tx), x + 16, 1), y,
			items[i].what);
		x += 16 + strlen(items[i].what) * CHAR_W + 18;
	}
	fputs("</g>\n", out);
}

int lc_profile_write_svg(const struct lc_profile *p, const char *title,
			 FILE *out)
{
	struct labels l;
	struct flame fl;
	char run[1024], quality[1024];
	int height, bottom;

	if (labels_init(&l, p) < 0)
		return -1;
	if (flame_init(&fl, p, &l) < 0) {
		labels_deinit(&l);
		return -1;
	}
	for (size_t i = 0; i < fl.n; i++) {
		if (!drawn(&fl, &fl.nodes[i]))
			fl.omitted++;
		else if (fl.nodes[i].depth > fl.maxdepth)
			fl.maxdepth = fl.nodes[i].depth;
	}
	bottom = TOP + (int)(fl.maxdepth + 1) * FRAME_H;
	height = bottom + 30;
	if (!title || !title[0])
		title = p->at ? "Calls of functions" :
			p->alloc ? "Allocation profile" :
			p->wall ? "Wall-clock profile" : "CPU profile";
	lc_sink_describe_run(p, run, sizeof(run));
	lc_sink_cat(run, sizeof(run), "; widths: %s",
	    p->at ? "calls" : p->alloc ? "bytes allocated" :
	    p->wall ? "wall-clock time (us)" : "CPU time (us)");
	if (!fl.total)
		lc_sink_cat(run, sizeof(run), "; no samples");
	if (fl.omitted)
		lc_sink_cat(run, sizeof(run),
		    "; %zu frame%s under 0.1%% not drawn", fl.omitted,
		    fl.omitted == 1 ? "" : "s");
	lc_sink_describe_quality(p, quality, sizeof(quality));
	errno = 0;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" "
		"standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:lc=\"urn:luacore:flame\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" lc:xpad=\"%d\" lc:fw=\"%d\" "
		"lc:total=\"%" PRId64 "\" onload=\"init()\">\n",
		SVG_W, height, SVG_W, height, XPAD, FW, fl.total);
	fputs("<title>", out);
	xml_str(out, title, SIZE_MAX);
	fprintf(out, "</title>\n<desc>Flame graph written by %s: the root "
		"is at the bottom, each frame is as wide as the samples "
		"under it.</desc>\n", PACKAGE_STRING);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n",
		svg_style);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]>"
		"</script>\n", svg_script);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
		"fill=\"rgb(250,250,246)\"/>\n", SVG_W, height);
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\" "
		"text-anchor=\"middle\">", SVG_W / 2);
	xml_fit(out, title, 100);
	fprintf(out, "</text>\n<text id=\"subtitle\" class=\"sub\" x=\"%d\" "
		"y=\"44\" text-anchor=\"middle\">", SVG_W / 2);
	xml_fit(out, run, 165);
	fprintf(out, "</text>\n<text id=\"quality\" class=\"sub\" x=\"%d\" "
		"y=\"60\" text-anchor=\"middle\">", SVG_W / 2);
	xml_fit(out, quality, 165);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"ctl hide\" x=\"%d\" "
		"y=\"80\">Reset zoom</text>\n", XPAD);
	fprintf(out, "<text id=\"search\" class=\"ctl\" x=\"%d\" y=\"80\" "
		"text-anchor=\"end\">Search</text>\n", SVG_W - XPAD);
	svg_legend(out, 80);
	fputs("<g id=\"frames\">\n", out);
	for (size_t i = 0; i < fl.n; i++)
		if (drawn(&fl, &fl.nodes[i]))
			svg_frame(p, &fl, &l, &fl.nodes[i], out);
	fputs("</g>\n", out);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\">Hover over a "
		"frame for details, click to zoom; Ctrl-F or Search to "
		"find frames</text>\n", XPAD, bottom + 18);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" "
		"text-anchor=\"end\"></text>\n", SVG_W - XPAD, bottom + 18);
	fputs("</svg>\n", out);

	flame_deinit(&fl);
	labels_deinit(&l);
	return lc_sink_finish(out);
}

static const char *const suffixes[] = { ".svg", NULL };

const struct lc_sink lc_sink_svg = {
	.name = "svg",
	.suffixes = suffixes,
	.write = lc_profile_write_svg,
	.what = "an interactive SVG flame graph",
};
