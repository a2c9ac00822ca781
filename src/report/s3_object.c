/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s3_object.c - what the S3 reporter uploads: the zip (through libzip,
 * loaded with dlopen like libcurl), metadata.json, the key and URL, and
 * the classification of S3's answers (see s3.h).
 *
 * libzip is loaded, not linked, for the reason libcurl is (http.c): the
 * library is preloaded into arbitrary programs, and libzip brings libssl,
 * libcrypto and libbz2, whose constructors would then run in every
 * profiled program, S3 or not.
 */
#include "report/s3.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "util/error.h"
#include "util/forkguard.h"
#include "util/utctime.h"

static struct zip_api {
	zip_source_t *(*source_buffer_create)(const void *d, zip_uint64_t n, int freep,
					      zip_error_t *e);
	zip_t *(*open_from_source)(zip_source_t *s, int flags, zip_error_t *e);
	void (*source_keep)(zip_source_t *s);
	void (*source_free)(zip_source_t *s);
	zip_source_t *(*source_buffer)(zip_t *z, const void *d, zip_uint64_t n, int freep);
	zip_int64_t (*file_add)(zip_t *z, const char *name, zip_source_t *s, zip_flags_t f);
	int (*set_file_compression)(zip_t *z, zip_uint64_t i, zip_int32_t m, zip_uint32_t flags);
	int (*close)(zip_t *z);
	void (*discard)(zip_t *z);
	const char *(*strerror)(zip_t *z);
	int (*source_open)(zip_source_t *s);
	int (*source_close)(zip_source_t *s);
	zip_int64_t (*source_read)(zip_source_t *s, void *d, zip_uint64_t n);
	int (*source_seek)(zip_source_t *s, zip_int64_t off, int whence);
	zip_int64_t (*source_tell)(zip_source_t *s);
	void (*error_init)(zip_error_t *e);
	void (*error_fini)(zip_error_t *e);
	const char *(*error_strerror)(zip_error_t *e);
	zip_error_t *(*source_error)(zip_source_t *s);
} Z;

static pthread_once_t zip_once = PTHREAD_ONCE_INIT;
static char zip_load_error[EMBER_ERROR_MAX];
static int zip_ok;

static void load_zip_guarded(void);

static void load_zip(void)
{
	ember__forkguard_enter(); /* libzip's initialization (forkguard.h) */
	load_zip_guarded();
	ember__forkguard_leave();
}

static void load_zip_guarded(void)
{
	static const char *const names[] = {"libzip.so.4", "libzip.so.5"};
	void *lib = NULL;
	for (size_t i = 0; !lib && i < sizeof(names) / sizeof(names[0]); i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		snprintf(zip_load_error, sizeof(zip_load_error), "the S3 reporter needs libzip, which "
			 "cannot be loaded (%s); install libzip4", why ? why : "not found");
		return;
	}
	struct { void **slot; const char *name; } syms[] = {
		{(void **)&Z.source_buffer_create, "zip_source_buffer_create"},
		{(void **)&Z.open_from_source, "zip_open_from_source"},
		{(void **)&Z.source_keep, "zip_source_keep"},
		{(void **)&Z.source_free, "zip_source_free"},
		{(void **)&Z.source_buffer, "zip_source_buffer"},
		{(void **)&Z.file_add, "zip_file_add"},
		{(void **)&Z.set_file_compression, "zip_set_file_compression"},
		{(void **)&Z.close, "zip_close"},
		{(void **)&Z.discard, "zip_discard"},
		{(void **)&Z.strerror, "zip_strerror"},
		{(void **)&Z.source_open, "zip_source_open"},
		{(void **)&Z.source_close, "zip_source_close"},
		{(void **)&Z.source_read, "zip_source_read"},
		{(void **)&Z.source_seek, "zip_source_seek"},
		{(void **)&Z.source_tell, "zip_source_tell"},
		{(void **)&Z.error_init, "zip_error_init"},
		{(void **)&Z.error_fini, "zip_error_fini"},
		{(void **)&Z.error_strerror, "zip_error_strerror"},
		{(void **)&Z.source_error, "zip_source_error"},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		if (!(*syms[i].slot = dlsym(lib, syms[i].name))) {
			snprintf(zip_load_error, sizeof(zip_load_error), "the libzip found lacks %s "
				 "(1.2 or newer is needed)", syms[i].name);
			return; /* stays loaded: unloading is never safe */
		}
	}
	zip_ok = 1;
}

int ember__zip_global_init(void)
{
	pthread_once(&zip_once, load_zip);
	return zip_ok ? 0 : ember__error(EMBER_ERR_UNSUPPORTED, "%s", zip_load_error);
}

size_t ember__s3_metadata_json(char *out, size_t cap, int64_t start_ms, int64_t end_ms,
			       int64_t interval_ms)
{
	int n = snprintf(out, cap, "{\"start\":%" PRId64 ",\"end\":%" PRId64
			 ",\"reporting_interval\":%" PRId64 "}", start_ms < 0 ? 0 : start_ms,
			 end_ms < 0 ? 0 : end_ms, interval_ms < 0 ? 0 : interval_ms);
	return n < 0 ? 0 : (size_t)n;
}

static int add_entry(zip_t *za, const char *name, const void *data, size_t len)
{
	zip_source_t *s = Z.source_buffer(za, data, len, 0);
	if (!s)
		return -1;
	zip_int64_t i = Z.file_add(za, name, s, ZIP_FL_ENC_UTF_8);
	if (i < 0) {
		Z.source_free(s);
		return -1;
	}
	return Z.set_file_compression(za, (zip_uint64_t)i, ZIP_CM_DEFLATE, 0);
}

int ember__s3_zip(const uint8_t *jfr, size_t jfr_len, const char *metadata_json, uint8_t **out,
		  size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	int rc = ember__zip_global_init();
	if (rc)
		return rc;
	zip_error_t ze;
	Z.error_init(&ze);
	zip_source_t *src = Z.source_buffer_create(NULL, 0, 0, &ze);
	if (!src) {
		rc = ember__error(EMBER_ERR_NOMEM, "zip: %s", Z.error_strerror(&ze));
		Z.error_fini(&ze);
		return rc;
	}
	zip_t *za = Z.open_from_source(src, ZIP_TRUNCATE, &ze);
	if (!za) {
		rc = ember__error(EMBER_ERR_NOMEM, "zip: %s", Z.error_strerror(&ze));
		Z.error_fini(&ze);
		Z.source_free(src);
		return rc;
	}
	Z.error_fini(&ze);
	Z.source_keep(src); /* survives zip_close, which writes the archive into it */
	if (add_entry(za, EMBER_S3_JFR_ENTRY, jfr ? (const void *)jfr : "", jfr_len) ||
	    add_entry(za, EMBER_S3_META_ENTRY, metadata_json, strlen(metadata_json))) {
		rc = ember__error(EMBER_ERR_NOMEM, "zip: %s", Z.strerror(za));
		Z.discard(za);
		Z.source_free(src);
		return rc;
	}
	if (Z.close(za) < 0) {
		rc = ember__error(EMBER_ERR_NOMEM, "zip: %s", Z.strerror(za));
		Z.discard(za);
		Z.source_free(src);
		return rc;
	}
	uint8_t *buf = NULL;
	zip_int64_t n = -1;
	if (Z.source_open(src) == 0) {
		if (Z.source_seek(src, 0, SEEK_END) == 0 && (n = Z.source_tell(src)) >= 0 &&
		    Z.source_seek(src, 0, SEEK_SET) == 0 && (buf = malloc(n ? (size_t)n : 1)) &&
		    Z.source_read(src, buf, (zip_uint64_t)n) != n)
			n = -1;
		Z.source_close(src);
	}
	Z.source_free(src);
	if (n < 0 || !buf) {
		free(buf);
		return ember__error(EMBER_ERR_NOMEM, "zip: cannot read the archive back from memory");
	}
	*out = buf;
	*out_len = (size_t)n;
	return 0;
}

void ember__s3_time(time_t t, char out[32])
{
	/* Neither strftime nor gmtime_r: glibc's read TZ with getenv() (at a
	 * process's first call) on the uploader thread, unsafe while the
	 * program calls setenv (util/utctime.h). */
	ember__utc tm;
	ember__utc_from_unix((int64_t)t, &tm);
	snprintf(out, 32, "%04u-%02u-%02uT%02u-%02u-%02uZ", (unsigned)tm.year % 10000u,
		 (unsigned)tm.mon % 100u, (unsigned)tm.mday % 100u, (unsigned)tm.hour % 100u,
		 (unsigned)tm.min % 100u, (unsigned)tm.sec % 100u);
}

int ember__s3_key(char *out, size_t cap, const char *group, const char *machine, long pid,
		  const char *time)
{
	int n = snprintf(out, cap, "profile_%s_%s_%ld_%s.zip", group, machine, pid, time);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* Percent-encodes all but unreserved characters (and '/' if keep_slash). */
static size_t pct(char *out, size_t cap, size_t n, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (n + 4 >= cap)
			return cap;
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~", *p) || (keep_slash && *p == '/')) {
			out[n++] = (char)*p;
		} else {
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		}
	}
	out[n] = '\0';
	return n;
}

int ember__s3_object_url(char *out, size_t cap, const char *endpoint, int path_style,
			 const char *bucket, const char *region, const char *key)
{
	int n;
	if (path_style) {
		size_t el = strlen(endpoint);
		while (el > 0 && endpoint[el - 1] == '/')
			el--;
		n = snprintf(out, cap, "%.*s/%s/", (int)el, endpoint, bucket);
	} else {
		n = snprintf(out, cap, "https://%s.s3.%s.amazonaws.com/", bucket, region);
	}
	if (n < 0 || (size_t)n >= cap)
		return -1;
	return pct(out, cap, (size_t)n, key, 0) >= cap ? -1 : 0;
}

/* <Tag>text</Tag> from an S3 error document, entities left as they are. */
static void xml_tag(const char *body, const char *tag, char *out, size_t cap)
{
	char open[40], close[40];
	out[0] = '\0';
	if (!body || cap < 2)
		return;
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *a = strstr(body, open);
	if (!a)
		return;
	a += strlen(open);
	const char *b = strstr(a, close);
	if (!b)
		return;
	size_t n = (size_t)(b - a) < cap - 1 ? (size_t)(b - a) : cap - 1;
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)a[i] < 0x20 ? ' ' : a[i];
	out[n] = '\0';
}

int ember__s3_classify(long status, const char *body, char *code, size_t code_cap,
		       char *message, size_t msg_cap, int *refresh)
{
	*refresh = 0;
	xml_tag(body, "Code", code, code_cap);
	xml_tag(body, "Message", message, msg_cap);
	if (status >= 200 && status < 300)
		return EMBER__SEND_OK;
	if (status == 408 || status == 429 || status >= 500)
		return EMBER__SEND_RETRY;
	if ((status == 403 || status == 400) &&
	    (!strcmp(code, "RequestTimeTooSkewed") || !strcmp(code, "ExpiredToken") ||
	     !strcmp(code, "TokenRefreshRequired"))) {
		*refresh = 1;
		return EMBER__SEND_RETRY;
	}
	return EMBER__SEND_PERMANENT;
}
