/* Error objects and small string helpers. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/base.h"

const char *lc_version(void)
{
	return LC_VERSION_STRING;
}

/* Returned when even an error cannot be allocated; never freed. */
struct lc_error lc_error_nomem = {
	.code = LC_ERR_NOMEM,
	.message = (char *)"out of memory",
};

struct lc_error *lc_error_create(enum lc_error_code code, const char *fmt, ...)
{
	struct lc_error *err = calloc(1, sizeof(*err));
	va_list ap;

	if (!err)
		return &lc_error_nomem;
	err->code = code;
	va_start(ap, fmt);
	if (vasprintf(&err->message, fmt, ap) < 0)
		err->message = NULL;
	va_end(ap);
	if (!err->message) {
		free(err);
		return &lc_error_nomem;
	}
	return err;
}

struct lc_error *lc_error_fault(uint64_t address, const char *what)
{
	struct lc_error *err = lc_error_create(LC_ERR_FAULT,
		"cannot read %s at 0x%" PRIx64, what, address);

	if (err != &lc_error_nomem)
		err->address = address;
	return err;
}

enum lc_error_code lc_error_code(const struct lc_error *err)
{
	return err ? err->code : 0;
}

const char *lc_error_message(const struct lc_error *err)
{
	return err ? err->message : "success";
}

uint64_t lc_error_address(const struct lc_error *err)
{
	return err ? err->address : 0;
}

void lc_error_destroy(struct lc_error *err)
{
	if (!err || err == &lc_error_nomem)
		return;
	free(err->message);
	free(err);
}

void lc_strbuf_append(struct lc_strbuf *sb, const char *s, size_t n)
{
	if (sb->failed)
		return;
	if (sb->len + n + 1 > sb->cap) {
		size_t cap = sb->cap ? sb->cap : 64;
		char *p;

		while (cap < sb->len + n + 1)
			cap *= 2;
		p = realloc(sb->buf, cap);
		if (!p) {
			sb->failed = true;
			return;
		}
		sb->buf = p;
		sb->cap = cap;
	}
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void lc_strbuf_appendf(struct lc_strbuf *sb, const char *fmt, ...)
{
	char small[256];
	char *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		sb->failed = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		lc_strbuf_append(sb, small, (size_t)n);
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&big, fmt, ap) < 0)
		big = NULL;
	va_end(ap);
	if (!big) {
		sb->failed = true;
		return;
	}
	lc_strbuf_append(sb, big, (size_t)n);
	free(big);
}

char *lc_strbuf_steal(struct lc_strbuf *sb)
{
	char *s = sb->failed ? NULL : sb->buf;

	if (sb->failed)
		free(sb->buf);
	else if (!s)
		s = strdup("");
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->failed = false;
	return s;
}

char *lc_strdup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

const char *lc_base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

double lc_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
