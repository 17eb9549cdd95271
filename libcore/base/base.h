/* The base layer: errors, growable strings, small helpers.  Every other
 * layer may include it; it includes only luacore.h.  Not installed.
 * Ownership follows luacore.h's conventions. */
#ifndef LC_BASE_H
#define LC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

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

char *lc_strdup_or_null(const char *s);
/* The part of a path after its last '/' (NULL for NULL). */
const char *lc_base_name(const char *path);
/* CLOCK_MONOTONIC in seconds. */
double lc_now_s(void);

#endif /* LC_BASE_H */
