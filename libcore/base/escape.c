/* Escaping bytes read from a target for text output.  Every string a
 * target supplies (names of chunks, functions, fields, locals, threads,
 * modules and files, and the values themselves) may hold any byte; text
 * output must neither send a terminal control sequence nor let a target
 * string pass for a line of its own.  One tokenizer serves both forms:
 * names in C's notation (\e, \n, \xNN), values in Lua's (\ddd decimal,
 * as string.format's %q writes them). */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "base/base.h"

/* Length of the well-formed UTF-8 sequence starting s (2-4 bytes), or 0:
 * overlong forms, surrogates and values past U+10FFFF are not. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) ||	/* overlong */
	    (c == 0xed && s[1] >= 0xa0) ||	/* surrogate */
	    (c == 0xf0 && s[1] < 0x90) ||	/* overlong */
	    (c == 0xf4 && s[1] >= 0x90))	/* above U+10FFFF */
		return 0;
	return len;
}

/* Well-formed characters that still act on a terminal or on how a line
 * reads: the C1 controls U+0080-U+009F (U+009B is CSI where a terminal
 * takes 8-bit controls), the line and paragraph separators U+2028 and
 * U+2029, and the bidirectional embeddings, overrides and isolates
 * U+202A-U+202E and U+2066-U+2069, which reorder what follows them. */
static bool utf8_unsafe(const unsigned char *s, size_t len)
{
	if (len == 2)
		return s[0] == 0xc2 && s[1] < 0xa0;
	if (len == 3 && s[0] == 0xe2 && s[1] == 0x80)
		return s[2] >= 0xa8 && s[2] <= 0xae;
	if (len == 3 && s[0] == 0xe2 && s[1] == 0x81)
		return s[2] >= 0xa6 && s[2] <= 0xa9;
	return false;
}

size_t lc_esc_token(const unsigned char *s, size_t n, unsigned flags,
		    char tok[LC_ESC_TOKEN_MAX], size_t *used)
{
	static const char from[] = "\\\n\r\t\a\b\f\v\033";
	static const char to[] = "\\nrtabfve";
	unsigned c = s[0];
	const char *e;
	size_t k;

	*used = 1;
	if (c == '"' && (flags & LC_ESC_QUOTE)) {
		memcpy(tok, "\\\"", 2);
		return 2;
	}
	/* Lua has no \e: ESC is \027 there. */
	if (c && (e = memchr(from, (int)c, sizeof(from) - 1)) &&
	    !(c == 033 && (flags & LC_ESC_LUA))) {
		tok[0] = '\\';
		tok[1] = to[e - from];
		return 2;
	}
	if (c >= 0x20 && c < 0x7f) {
		tok[0] = (char)c;
		return 1;
	}
	if (c >= 0x80 && (k = utf8_seq(s, n)) && !utf8_unsafe(s, k)) {
		memcpy(tok, s, k);
		*used = k;
		return k;
	}
	if (flags & LC_ESC_LUA)
		return (size_t)snprintf(tok, LC_ESC_TOKEN_MAX, "\\%03u", c);
	return (size_t)snprintf(tok, LC_ESC_TOKEN_MAX, "\\x%02x", c);
}

size_t lc_esc_width(const char *s, size_t n, unsigned flags, size_t cap)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t w = 0;

	for (size_t i = 0; i < n && w <= cap;) {
		char tok[LC_ESC_TOKEN_MAX];
		size_t used;

		w += lc_esc_token(u + i, n - i, flags, tok, &used);
		i += used;
	}
	return w;
}

size_t lc_esc_append(struct lc_strbuf *sb, const char *s, size_t n,
		     unsigned flags, size_t room)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, w = 0;

	while (i < n) {
		char tok[LC_ESC_TOKEN_MAX];
		size_t used, k = lc_esc_token(u + i, n - i, flags, tok, &used);

		if (w + k > room)
			break;
		lc_strbuf_append(sb, tok, k);
		w += k;
		i += used;
	}
	return i;
}

size_t lc_esc_copy(char *buf, size_t size, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), i = 0, w = 0;

	if (!size)
		return 0;
	while (i < n) {
		char tok[LC_ESC_TOKEN_MAX];
		size_t used, k = lc_esc_token(u + i, n - i, 0, tok, &used);

		if (w + k + 1 > size)
			break;
		memcpy(buf + w, tok, k);
		w += k;
		i += used;
	}
	buf[w] = '\0';
	return w;
}

void lc_print_escaped(const char *s, FILE *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;

	if (!s)
		return;
	n = strlen(s);
	for (size_t i = 0; i < n;) {
		char tok[LC_ESC_TOKEN_MAX];
		size_t used, k = lc_esc_token(u + i, n - i, 0, tok, &used);

		fwrite(tok, 1, k, out);
		i += used;
	}
}

/* JSON strings: the bytes, not code points (Lua strings are bytes). */
void lc_json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				/* Bytes, not code points: Lua strings are
				 * not UTF-8 in general. */
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}
