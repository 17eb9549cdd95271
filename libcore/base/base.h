/* The base layer: errors, growable strings, small helpers.  Every other
 * layer may include it; it includes only luacore.h.  Not installed.
 * Ownership follows luacore.h's conventions. */
#ifndef LC_BASE_H
#define LC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "luacore.h"

#define LC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors (error.c) ---- */

struct lc_error {
	enum lc_error_code code;
	uint64_t address;
	char *message;
};

extern struct lc_error lc_error_nomem;

struct lc_error *lc_error_create(enum lc_error_code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct lc_error *lc_error_fault(uint64_t address, const char *what);

/* Growable string for building messages and names. */
struct lc_strbuf {
	char *buf;
	size_t len, cap;
	bool failed;		/* an allocation failed; contents truncated */
};
void lc_strbuf_appendf(struct lc_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void lc_strbuf_append(struct lc_strbuf *sb, const char *s, size_t n);
/* Hands the buffer to the caller (malloc'd, NUL-terminated, may be NULL
 * on allocation failure) and resets sb. */
char *lc_strbuf_steal(struct lc_strbuf *sb);

/* ---- escaping (escape.c) ----
 *
 * What text output prints of a string a target supplied.  Kept as they
 * are: printable ASCII and well-formed multi-byte UTF-8, except the C1
 * controls (U+0080-U+009F), U+2028, U+2029 and the bidirectional
 * controls U+202A-U+202E and U+2066-U+2069.  The rest is escaped:
 * backslash as \\, \a \b \t \n \v \f \r, ESC as \e, any other byte as
 * \xNN (two lower-case hex digits), each byte of a character that is not
 * kept on its own.  With LC_ESC_QUOTE '"' is \" too; with LC_ESC_LUA the
 * notation is a Lua string literal's: ESC and other bytes are \ddd in
 * decimal, as string.format's %q writes them (values: vm/puc/values.h).
 * The escaped text has no byte below 0x20, no DEL, and is valid UTF-8. */
enum {
	LC_ESC_QUOTE = 1,	/* '"' as \" */
	LC_ESC_LUA = 2,		/* \ddd, no \e */
};
#define LC_ESC_TOKEN_MAX	8
/* The display form of the character at s (n >= 1 bytes left) into tok,
 * returning its length (at most 4); *used gets the bytes consumed. */
size_t lc_esc_token(const unsigned char *s, size_t n, unsigned flags,
		    char tok[LC_ESC_TOKEN_MAX], size_t *used);
/* Escaped width of s[0..n), counting no further than cap + 1. */
size_t lc_esc_width(const char *s, size_t n, unsigned flags, size_t cap);
/* Append the escaped form of s[0..n), as much of it as fits in room bytes
 * without splitting a character.  Returns the bytes of s consumed. */
size_t lc_esc_append(struct lc_strbuf *sb, const char *s, size_t n,
		     unsigned flags, size_t room);
/* The escaped form (C notation) of the string s (NULL: "") into buf, cut
 * on a character boundary to fit size, NUL-terminated.  Returns its
 * length. */
size_t lc_esc_copy(char *buf, size_t size, const char *s);
/* The escaped form (C notation) of s to out: lc_print_escaped
 * (luacore.h). */

/* ---- what the library says it is doing (log.c) ---- */

/* Whether a line of this level goes anywhere (to skip building it). */
bool lc_log_wanted(enum lc_log_level level);
void lc_log(enum lc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

char *lc_strdup_or_null(const char *s);
/* The part of a path after its last '/' (NULL for NULL). */
const char *lc_base_name(const char *path);
/* CLOCK_MONOTONIC in seconds. */
double lc_now_s(void);
/* Big arrays (a heap walk's: millions of entries) as anonymous
 * mappings with huge pages asked for where the kernel gives them on
 * request: one page fault per 2 MiB instead of 512 (a fault costs
 * microseconds in a VM), and growth by mremap, which moves no bytes.
 * lc_huge_alloc: n zeroed bytes, or NULL.  lc_huge_grow: p of old
 * bytes (NULL, 0: none yet) as n bytes, the new ones zeroed, or NULL
 * with p unchanged.  lc_huge_free: p of n bytes (NULL: nothing). */
void *lc_huge_alloc(size_t n);
void *lc_huge_grow(void *p, size_t old, size_t n);
void lc_huge_free(void *p, size_t n);

/* s as a JSON string ("null" for NULL): bytes outside printable ASCII
 * as \u00XX, since Lua strings are bytes (report/format.c). */
void lc_json_str(FILE *out, const char *s);

#endif /* LC_BASE_H */
