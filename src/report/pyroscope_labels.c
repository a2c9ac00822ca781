/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pyroscope_labels.c - the Pyroscope reporter's label rules: what the
 * server accepts as application name and tags, how many label names each
 * profile type's series will carry on the server, which names a 1.x server
 * rewrites or refuses, the age limit, the tenant id (see pyroscope.h).
 * Split from pyroscope.c, which encodes and sends. Nothing here is
 * async-signal-safe.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "report/pyroscope.h"
#include "upload/pipeline.h"
#include "util/error.h"

const char *const ember__pyro_own_names[EMBER_PYRO_NOWN] = {"pyroscope_spy", "otel.scope.name",
							     "otel.scope.version"};

/* ---- label rules ---- */

const char *ember__pyroscope_metric(const char *type)
{
	static const char *const map[][2] = {
		{"cpu", "process_cpu"}, {"wall", "wall"},   {"memory", "memory"},
		{"heap", "memory"},     {"alloc", "memory"}, {"mutex", "mutex"},
		{"block", "block"},
	};
	for (size_t i = 0; type && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(type, map[i][0]))
			return map[i][1];
	return NULL;
}

int ember__utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t len;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			len = 2, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, cp = c & 0x07;
		} else {
			return 0;
		}
		if (i + len > n)
			return 0;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

static int check_label(const char *what, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	if (nl == 0)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: %s has an empty name", what);
	if (nl > EMBER_PYRO_MAX_NAME_LEN || !ember__utf8_valid(name, nl))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: %s \"%.64s\" has a name that is "
				    "not UTF-8 or longer than %d bytes", what, name,
				    EMBER_PYRO_MAX_NAME_LEN);
	if (!strncmp(name, "__", 2))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: %s \"%s\": names starting with "
				    "\"__\" are reserved by the server", what, name);
	if (vl == 0)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: %s \"%s\" has an empty value "
				    "(the server drops empty labels)", what, name);
	if (vl > EMBER_PYRO_MAX_VALUE_LEN || !ember__utf8_valid(value, vl))
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: the value of %s \"%s\" is not "
				    "UTF-8 or longer than %d bytes", what, name,
				    EMBER_PYRO_MAX_VALUE_LEN);
	return 0;
}

int ember__pyroscope_own_label(const char *name)
{
	if (!strcmp(name, "service_name"))
		return EMBER_PYRO_NOWN;
	for (int i = 0; i < EMBER_PYRO_NOWN; i++)
		if (!strcmp(name, ember__pyro_own_names[i]))
			return i;
	return -1;
}

int ember__pyroscope_ingest_app_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == '/';
}

int ember__pyroscope_check_info(const ember_agent_info *info, int protocol)
{
	const char *app = info->app_name ? info->app_name : "";
	int rc = check_label("application name (service_name)", "service_name", app);
	if (rc)
		return rc;
	if (protocol == EMBER_PYROSCOPE_INGEST || protocol == EMBER__PYRO_JFR)
		for (const char *p = app; *p; p++)
			if (!ember__pyroscope_ingest_app_char(*p))
				return ember__error(EMBER_ERR_INVALID, "Pyroscope /ingest: application "
						    "name \"%s\" may only contain letters, digits and "
						    "_ . - / (the push protocol has no such limit)", app);
	for (size_t i = 0; i < info->ntags; i++) {
		const ember_tag *t = &info->tags[i];
		if ((rc = check_label("tag", t->key ? t->key : "", t->value ? t->value : "")))
			return rc;
		if (info->thread_labels && (!strcmp(t->key, "thread_id") || !strcmp(t->key, "thread_name")))
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: tag \"%s\" collides with the "
					    "thread labels", t->key);
		if (!strcmp(t->key, "thread_state") && info->wall_ms)
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: tag \"thread_state\" collides "
					    "with the label of wall-clock samples (--wall)");
	}
	/* Every profile type the agent will send, each with its own labels. */
	const char *types[3] = {"cpu", NULL, NULL};
	size_t nt = 1;
	if (info->wall_ms)
		types[nt++] = "wall";
	if (info->alloc)
		types[nt++] = "memory";
	for (size_t k = 0; k < nt; k++) {
		char why[512];
		size_t names = ember__pyroscope_label_count(info, protocol, types[k], why, sizeof(why));
		if (names > EMBER_PYRO_MAX_LABELS)
			return ember__error(EMBER_ERR_INVALID, "Pyroscope: %s profiles would carry %zu "
					    "label names per series, over the server's %d "
					    "(max-label-names-per-series; it refuses them): %s; remove %zu "
					    "tag%s or one of these settings", types[k], names,
					    EMBER_PYRO_MAX_LABELS, why, names - EMBER_PYRO_MAX_LABELS,
					    names - EMBER_PYRO_MAX_LABELS == 1 ? "" : "s");
	}
	return 0;
}

/*
 * How many label names a series of this profile type has once the server
 * has built it, as a 1.x server counts them: Push keeps the series labels
 * we send (distributor.Push, pushSeries adds service_name if absent), the
 * ingester write path then adds each sample's labels whose names are not
 * series labels yet (pkg/model/pprofsplit VisitSampleSeries,
 * addSampleLabelsToLabelsBuilder) and validation.ValidateLabels counts
 * them all. /ingest?format=pprof builds __name__, __delta__, pyroscope_spy
 * and service_name itself (og/convert/pprof createLabels); format=jfr
 * adds pyroscope_spy, __delta__, jfr_event, __name__ and service_name to
 * the name's labels (jfr-parser pprof/pyroscope Labels).
 */
size_t ember__pyroscope_label_count(const ember_agent_info *info, int protocol, const char *type,
				    char *why, size_t cap)
{
	int jfr = protocol == EMBER__PYRO_JFR;
	int ingest = protocol == EMBER_PYROSCOPE_INGEST;
	int wall = !jfr && type && !strcmp(type, "wall");
	int mem = !jfr && type && !strcmp(type, "memory");
	size_t tags = 0;
	for (size_t i = 0; i < info->ntags; i++) {
		const char *k = info->tags[i].key ? info->tags[i].key : "";
		if (ingest ? strcmp(k, "service_name") && strcmp(k, "pyroscope_spy")
			   : ember__pyroscope_own_label(k) < 0)
			tags++;
	}
	size_t base = jfr ? 5 : ingest ? 4 : 2 + EMBER_PYRO_NOWN + (size_t)mem;
	size_t thr = !jfr && info->thread_labels ? 2 : 0;
	size_t n = base + tags + thr + (size_t)wall;
	if (why && cap) {
		size_t o = (size_t)snprintf(why, cap, "%zu own (%s)",
			base, jfr ? "__name__, service_name, pyroscope_spy, __delta__, jfr_event"
			: ingest ? "__name__, service_name, pyroscope_spy, __delta__"
			: mem ? "__name__, service_name, 3 spy labels, __delta__"
			: "__name__, service_name, 3 spy labels");
		if (o < cap)
			o += (size_t)snprintf(why + o, cap - o, ", %zu tag%s (--tag, EMBERPROF_TAGS, "
					      "PYROSCOPE_LABELS)", tags, tags == 1 ? "" : "s");
		if (thr && o < cap)
			o += (size_t)snprintf(why + o, cap - o, ", thread_id and thread_name "
					      "(--thread-labels, EMBERPROF_THREAD_LABELS)");
		if (wall && o < cap)
			snprintf(why + o, cap - o, ", thread_state (--wall, EMBERPROF_WALL)");
	}
	return n;
}

int ember__pyroscope_legacy_name(const char *name, char *out, size_t cap)
{
	int dots = 0;
	if (!*name)
		return EMBER_PYRO_NAME_REFUSED;
	for (const char *c = name; *c; c++) {
		int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
			 (*c >= '0' && *c <= '9' && c != name);
		if (*c == '.')
			dots = 1;
		else if (!ok)
			return EMBER_PYRO_NAME_REFUSED;
	}
	if (!dots)
		return EMBER_PYRO_NAME_OK;
	if (out && cap) {
		snprintf(out, cap, "%s", name);
		for (char *c = out; *c; c++)
			if (*c == '.')
				*c = '_';
	}
	return EMBER_PYRO_NAME_REWRITTEN;
}

/*
 * Warns, once at bind, about tag names a Pyroscope 1.x server rewrites
 * (dots become '_') or refuses, and about two names that become one
 * there. Current servers take them as they are, so this is no error.
 */
void ember__pyroscope_warn_names(const ember_agent_info *info, const struct ember__upload_log *log)
{
	for (size_t i = 0; i < info->ntags; i++) {
		const char *k = info->tags[i].key;
		char fixed[EMBER_PYRO_MAX_NAME_LEN + 1];
		int how = ember__pyroscope_legacy_name(k, fixed, sizeof(fixed));
		if (how == EMBER_PYRO_NAME_REFUSED)
			ember__upload_logf(log, EMBER_LOG_WARN, "tag \"%s\": a Pyroscope 1.x server "
					   "refuses this label name (only letters, digits, '_' and "
					   "'.', not starting with a digit) and every upload with it; "
					   "Pyroscope 2 accepts it", k);
		if (how != EMBER_PYRO_NAME_REWRITTEN)
			continue;
		ember__upload_logf(log, EMBER_LOG_WARN, "tag \"%s\": a Pyroscope 1.x server stores "
				   "this label as \"%s\" (dots become underscores)", k, fixed);
		for (size_t j = 0; j < info->ntags; j++) {
			char other[EMBER_PYRO_MAX_NAME_LEN + 1];
			if (j != i && ember__pyroscope_legacy_name(info->tags[j].key, other,
								     sizeof(other)) != EMBER_PYRO_NAME_REFUSED &&
			    !strcmp(strchr(info->tags[j].key, '.') ? other : info->tags[j].key, fixed) &&
			    strcmp(info->tags[j].value, info->tags[i].value))
				ember__upload_logf(log, EMBER_LOG_WARN, "tags \"%s\" and \"%s\" become "
						   "the same label on a Pyroscope 1.x server, which "
						   "then refuses every upload (their values differ)",
						   k, info->tags[j].key);
		}
	}
}

uint64_t ember__pyroscope_max_age_ms(const ember_pyroscope_options *o)
{
	if (o->max_age_s == UINT_MAX)
		return 0;
	return (uint64_t)(o->max_age_s ? o->max_age_s : EMBER_PYRO_MAX_AGE_S) * 1000;
}

int ember__pyroscope_check_age(unsigned interval_ms, uint64_t max_age_ms)
{
	/* A window is sent when it ends, so it is at least one interval old
	 * (its time is its start): at or past the server's age limit every
	 * window would be refused. */
	if (max_age_ms && interval_ms && interval_ms >= max_age_ms)
		return ember__error(EMBER_ERR_INVALID, "Pyroscope: the reporting interval (%u s) is "
				    "not shorter than the %" PRIu64 " s after their start within which "
				    "the server accepts profiles (validation.reject-older-than): every "
				    "window would be refused. Use a shorter --interval, or set "
				    "EMBERPROF_SERVER_MAX_AGE to the server's setting",
				    interval_ms / 1000, max_age_ms / 1000);
	return 0;
}

int ember__pyroscope_check_tenant(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > EMBER_PYRO_MAX_TENANT_LEN || !strcmp(t, ".") || !strcmp(t, ".."))
		goto bad;
	for (const char *p = t; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("!-_.*'()", c)))
			goto bad;
	}
	return 0;
bad:
	return ember__error(EMBER_ERR_INVALID, "Pyroscope: tenant id \"%.160s\" is invalid: 1 to %d "
			    "characters among letters, digits and ! - _ . * ' ( ), and not \".\" or "
			    "\"..\"", t, EMBER_PYRO_MAX_TENANT_LEN);
}

