/* SPDX-License-Identifier: Apache-2.0 */
/*
 * credentials.c - the AWS credentials chain and region lookup (see
 * credentials.h).
 */
#include "aws/credentials.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/redact.h"
#include "util/utctime.h"
#include "util/dep_jansson.h"

#define INI_MAX (1 << 20)
#define CREDS_JSON_MAX 16384
#define REFRESH_AHEAD_S 300

static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;
	while (n--)
		*v++ = 0;
}

void ember__aws_creds_clear(ember__aws_creds *c)
{
	if (c->token) {
		wipe(c->token, strlen(c->token));
		free(c->token);
	}
	wipe(c, sizeof(*c));
	c->token = NULL;
}

int ember__aws_creds_copy(ember__aws_creds *dst, const ember__aws_creds *src)
{
	ember__aws_creds_clear(dst);
	*dst = *src;
	dst->token = NULL;
	if (src->token && !(dst->token = strdup(src->token)))
		return ember__error_oom("AWS session token");
	return 0;
}

static int set_field(const char *what, char *out, size_t cap, const char *v)
{
	size_t n = strlen(v);
	if (n == 0 || n >= cap)
		return ember__error(EMBER_ERR_FORMAT, "%s is empty or longer than %zu bytes", what,
				    cap - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] <= 0x20 || v[i] == 0x7f || v[i] == ':')
			return ember__error(EMBER_ERR_FORMAT, "%s contains a space, ':' or a control "
					    "character", what);
	memcpy(out, v, n + 1);
	return 0;
}

static int set_token(ember__aws_creds *c, const char *what, const char *v)
{
	if (!v || !*v)
		return 0;
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return ember__error(EMBER_ERR_FORMAT, "%s contains a control character", what);
	if (!(c->token = strdup(v)))
		return ember__error_oom("AWS session token");
	return 0;
}

/* ---- INI ---- */

int ember__aws_ini_get_text(const char *text, size_t len, const char *section, const char *key,
			    char *out, size_t cap)
{
	int in = 0, lineno = 0;
	size_t i = 0;
	while (i < len) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		lineno++;
		const char *l = text + i;
		size_t n = e - i;
		i = e + 1;
		if (n && l[n - 1] == '\r')
			n--;
		int indented = n && (l[0] == ' ' || l[0] == '\t');
		while (n && isspace((unsigned char)*l))
			l++, n--;
		while (n && isspace((unsigned char)l[n - 1]))
			n--;
		if (!n || *l == '#' || *l == ';')
			continue;
		if (*l == '[') {
			if (l[n - 1] != ']')
				return ember__error(EMBER_ERR_FORMAT, "line %d: a section header without "
						    "']'", lineno);
			const char *s = l + 1;
			size_t sn = n - 2;
			while (sn && isspace((unsigned char)*s))
				s++, sn--;
			while (sn && isspace((unsigned char)s[sn - 1]))
				sn--;
			/* "[profile  x]": any run of blanks after "profile" */
			char norm[256];
			size_t k = 0;
			for (size_t j = 0; j < sn && k + 1 < sizeof(norm); j++) {
				if (isspace((unsigned char)s[j]) && k && norm[k - 1] == ' ')
					continue;
				norm[k++] = isspace((unsigned char)s[j]) ? ' ' : s[j];
			}
			norm[k] = '\0';
			in = !strcmp(norm, section);
			continue;
		}
		if (indented)
			continue; /* a sub-setting (e.g. under "s3 =") */
		const char *eq = memchr(l, '=', n);
		if (!eq)
			return ember__error(EMBER_ERR_FORMAT, "line %d: expected \"name = value\"", lineno);
		if (!in)
			continue;
		size_t kn = (size_t)(eq - l);
		while (kn && isspace((unsigned char)l[kn - 1]))
			kn--;
		if (kn != strlen(key) || strncasecmp(l, key, kn))
			continue;
		const char *v = eq + 1;
		size_t vn = n - (size_t)(v - l);
		while (vn && isspace((unsigned char)*v))
			v++, vn--;
		if (vn >= cap)
			return ember__error(EMBER_ERR_FORMAT, "line %d: the value of %s is longer than "
					    "%zu bytes", lineno, key, cap - 1);
		memcpy(out, v, vn);
		out[vn] = '\0';
		return 1;
	}
	return 0;
}

int ember__aws_ini_get(const char *path, const char *section, const char *key, char *out,
		       size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return ember__error_errno(EMBER_ERR_IO, errno, "cannot open '%s'", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > INI_MAX) {
		close(fd);
		return ember__error(EMBER_ERR_IO, "'%s' is not a regular file under 1 MiB", path);
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return ember__error_oom("AWS shared file");
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	int rc = ember__aws_ini_get_text(buf, got, section, key, out, cap);
	wipe(buf, got);
	free(buf);
	if (rc < 0) {
		char why[EMBER_ERROR_MAX];
		snprintf(why, sizeof(why), "%s", ember_last_error());
		return ember__error(rc, "%s: %s", path, why);
	}
	return rc;
}

/* ---- chain ---- */

int ember__aws_chain_init(ember__aws_chain *ch, const ember__aws_env *env, const char *profile)
{
	memset(ch, 0, sizeof(*ch));
	ch->env = env;
	const char *p = profile && *profile ? profile : env->profile ? env->profile : "default";
	if (strlen(p) >= sizeof(ch->profile) || strpbrk(p, "[]\n\r"))
		return ember__error(EMBER_ERR_INVALID, "AWS profile name \"%.64s\" is invalid", p);
	snprintf(ch->profile, sizeof(ch->profile), "%s", p);
	return 0;
}

void ember__aws_chain_fini(ember__aws_chain *ch)
{
	ember__aws_creds_clear(&ch->cached);
	ch->have_cached = 0;
}

static void file_path(const ember__aws_env *env, const char *set, const char *name, char *out,
		      size_t cap)
{
	if (set)
		snprintf(out, cap, "%s", set);
	else if (env->home)
		snprintf(out, cap, "%s/.aws/%s", env->home, name);
	else
		out[0] = '\0';
}

/* 1 found, 0 not there, <0 error (message set). */
static int from_files(const ember__aws_chain *ch, ember__aws_creds *c)
{
	char path[2][1024], section[2][160];
	file_path(ch->env, ch->env->shared_credentials_file, "credentials", path[0], sizeof(path[0]));
	file_path(ch->env, ch->env->config_file, "config", path[1], sizeof(path[1]));
	snprintf(section[0], sizeof(section[0]), "%s", ch->profile);
	snprintf(section[1], sizeof(section[1]), "%s%s", strcmp(ch->profile, "default") ?
		 "profile " : "", ch->profile);
	for (int f = 0; f < 2; f++) {
		if (!path[f][0])
			continue;
		char akid[128], secret[256], token[4096];
		int a = ember__aws_ini_get(path[f], section[f], "aws_access_key_id", akid, sizeof(akid));
		if (a < 0)
			return a;
		if (a == 0)
			continue;
		int s = ember__aws_ini_get(path[f], section[f], "aws_secret_access_key", secret,
					   sizeof(secret));
		if (s <= 0) {
			wipe(secret, sizeof(secret));
			return s < 0 ? s : ember__error(EMBER_ERR_INVALID, "%s: profile [%s] has "
						       "aws_access_key_id but no aws_secret_access_key",
						       path[f], section[f]);
		}
		int t = ember__aws_ini_get(path[f], section[f], "aws_session_token", token,
					   sizeof(token));
		int rc = 0;
		if (t < 0 || (rc = set_field("aws_access_key_id", c->access_key_id,
					     sizeof(c->access_key_id), akid)) ||
		    (rc = set_field("aws_secret_access_key", c->secret, sizeof(c->secret), secret)) ||
		    (t > 0 && (rc = set_token(c, "aws_session_token", token))))
			rc = t < 0 ? t : rc;
		wipe(secret, sizeof(secret));
		wipe(token, sizeof(token));
		if (rc) {
			char why[EMBER_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", ember_last_error());
			return ember__error(rc, "%s [%s]: %s", path[f], section[f], why);
		}
		c->source = f == 0 ? "shared credentials file" : "shared config file";
		return 1;
	}
	return 0;
}

int64_t ember__aws_parse_time(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (strcmp(p, "Z") && strcmp(p, "+00:00"))
		return -1;
	/* not timegm, which may read TZ with getenv here (util/utctime.h) */
	ember__utc u = {(int64_t)tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			tm.tm_hour, tm.tm_min, tm.tm_sec};
	return ember__utc_to_unix(&u);
}

int ember__aws_parse_creds_json(const char *what, const char *text, size_t len,
				ember__aws_creds *out)
{
	json_t *j = ember__json_parse(what, text, len);
	if (!j)
		return EMBER_ERR_FORMAT;
	ember__aws_creds c;
	memset(&c, 0, sizeof(c));
	char token[4096], exp[64], code[64];
	int rc;
	json_t *cv = json_object_get(j, "Code");
	if (cv && json_is_string(cv) && !ember__json_str(what, j, "Code", code, sizeof(code)) &&
	    strcmp(code, "Success")) {
		rc = ember__error(EMBER_ERR_FORMAT, "%s: Code is \"%s\", not Success", what, code);
		goto out;
	}
	if ((rc = ember__json_str(what, j, "AccessKeyId", c.access_key_id, sizeof(c.access_key_id))) ||
	    (rc = ember__json_str(what, j, "SecretAccessKey", c.secret, sizeof(c.secret))) ||
	    (rc = ember__json_str(what, j, "Token", token, sizeof(token))) ||
	    (rc = ember__json_str(what, j, "Expiration", exp, sizeof(exp))))
		goto out;
	if ((c.expires = ember__aws_parse_time(exp)) < 0) {
		rc = ember__error(EMBER_ERR_FORMAT, "%s: Expiration \"%s\" is not an ISO 8601 UTC time",
				  what, exp);
		goto out;
	}
	if ((rc = set_field("AccessKeyId", c.access_key_id, sizeof(c.access_key_id),
			    c.access_key_id)) ||
	    (rc = set_field("SecretAccessKey", c.secret, sizeof(c.secret), c.secret)) ||
	    (rc = set_token(&c, "Token", token)))
		goto out;
	*out = c;
	memset(&c, 0, sizeof(c));
out:
	wipe(token, sizeof(token));
	ember__aws_creds_clear(&c);
	json_decref(j);
	return rc;
}

/* Full URIs may only reach https, or http on loopback and the ECS/EKS agents. */
static int full_uri_allowed(const char *uri)
{
	if (!strncasecmp(uri, "https://", 8))
		return 1;
	if (strncasecmp(uri, "http://", 7))
		return 0;
	const char *h = uri + 7;
	static const char *const ok[] = {"127.", "localhost", "[::1]", "169.254.170.2",
					 "169.254.170.23", "[fd00:ec2::23]"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t n = strlen(ok[i]);
		if (strncasecmp(h, ok[i], n))
			continue;
		char next = h[n];
		if (ok[i][n - 1] == '.' || next == ':' || next == '/' || next == '\0')
			return 1;
	}
	return 0;
}

static int read_token_file(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return ember__error_errno(EMBER_ERR_IO, errno, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE "
					  "'%s' cannot be read", path);
	size_t n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n && isspace((unsigned char)out[n - 1]))
		out[--n] = '\0';
	return 0;
}

static int from_container(const ember__aws_chain *ch, ember__aws_creds *c,
			  const _Atomic int *cancel)
{
	const ember__aws_env *e = ch->env;
	char url[2048], auth[2048 + 32], tok[2048];
	if (e->container_relative_uri) {
		snprintf(url, sizeof(url), "%s%s%s", e->ecs_credentials_host,
			 e->container_relative_uri[0] == '/' ? "" : "/", e->container_relative_uri);
	} else {
		if (!full_uri_allowed(e->container_full_uri))
			return ember__error(EMBER_ERR_INVALID, "AWS_CONTAINER_CREDENTIALS_FULL_URI \"%s\" "
					    "must be https, or http to a loopback address or the "
					    "ECS/EKS agent", e->container_full_uri);
		snprintf(url, sizeof(url), "%s", e->container_full_uri);
	}
	const char *hv[1];
	size_t nh = 0;
	tok[0] = '\0';
	if (e->container_auth_token_file) {
		int rc = read_token_file(e->container_auth_token_file, tok, sizeof(tok));
		if (rc)
			return rc;
	} else if (e->container_auth_token) {
		snprintf(tok, sizeof(tok), "%s", e->container_auth_token);
	}
	if (tok[0]) {
		for (const char *p = tok; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return ember__error(EMBER_ERR_INVALID, "the container authorization token "
						    "contains a control character");
		snprintf(auth, sizeof(auth), "Authorization: %s", tok);
		hv[nh++] = auth;
	}
	char *buf = malloc(CREDS_JSON_MAX);
	if (!buf)
		return ember__error_oom("container credentials");
	ember__send_result res;
	int connected, rc;
	char shown[512];
	ember__aws_lookup(e, "GET", url, hv, nh, buf, CREDS_JSON_MAX, cancel, &res, &connected);
	wipe(tok, sizeof(tok));
	wipe(auth, sizeof(auth));
	if (res.outcome != EMBER__SEND_OK)
		rc = ember__error(EMBER_ERR_REPORTER, "container credentials (GET %s): %s",
				  ember__redact_url(url, shown, sizeof(shown)), res.message);
	else
		rc = ember__aws_parse_creds_json("container credentials", buf, strlen(buf), c);
	wipe(buf, CREDS_JSON_MAX);
	free(buf);
	if (!rc)
		c->source = "container credentials";
	return rc;
}

static int from_imds(const ember__aws_chain *ch, ember__aws_creds *c, const _Atomic int *cancel,
		     int *absent)
{
	const ember__aws_env *e = ch->env;
	*absent = 0;
	char *buf = malloc(CREDS_JSON_MAX);
	if (!buf)
		return ember__error_oom("instance credentials");
	ember__send_result res;
	int connected, rc;
	static const char base[] = "/latest/meta-data/iam/security-credentials/";
	rc = ember__imds_get(e, base, buf, CREDS_JSON_MAX, cancel, &res, &connected);
	if (rc) {
		*absent = rc == -2 || !connected;
		rc = ember__error(EMBER_ERR_REPORTER, "instance role: %s", res.message);
		goto out;
	}
	char role[256];
	size_t n = strcspn(buf, "\r\n");
	if (n == 0 || n >= sizeof(role)) {
		rc = ember__error(EMBER_ERR_FORMAT, "instance role: IMDS lists no role (is an instance "
				  "profile attached?)");
		goto out;
	}
	memcpy(role, buf, n);
	role[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)role[i]) && !strchr("+=,.@_-", role[i])) {
			rc = ember__error(EMBER_ERR_FORMAT, "instance role: IMDS gave an invalid role "
					  "name");
			goto out;
		}
	char path[400];
	snprintf(path, sizeof(path), "%s%s", base, role);
	if ((rc = ember__imds_get(e, path, buf, CREDS_JSON_MAX, cancel, &res, &connected))) {
		rc = ember__error(EMBER_ERR_REPORTER, "instance role %s: %s", role, res.message);
		goto out;
	}
	rc = ember__aws_parse_creds_json("instance role credentials", buf, strlen(buf), c);
	if (!rc)
		c->source = "instance role (IMDS)";
out:
	wipe(buf, CREDS_JSON_MAX);
	free(buf);
	return rc;
}

int ember__aws_chain_get(ember__aws_chain *ch, int force, ember__aws_creds *out,
			 const _Atomic int *cancel)
{
	const ember__aws_env *e = ch->env;
	memset(out, 0, sizeof(*out));
	if (force)
		ember__aws_chain_fini(ch);
	int rc;
	/* 1. environment */
	if (e->access_key_id && e->secret_access_key) {
		if ((rc = set_field("AWS_ACCESS_KEY_ID", out->access_key_id, sizeof(out->access_key_id),
				    e->access_key_id)) ||
		    (rc = set_field("AWS_SECRET_ACCESS_KEY", out->secret, sizeof(out->secret),
				    e->secret_access_key)) ||
		    (rc = set_token(out, "AWS_SESSION_TOKEN", e->session_token))) {
			ember__aws_creds_clear(out);
			return rc;
		}
		out->source = "environment";
		return 0;
	}
	if (e->access_key_id || e->secret_access_key)
		return ember__error(EMBER_ERR_INVALID, "%s is set but %s is not",
				    e->access_key_id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
				    e->access_key_id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
	/* 2. shared files */
	if ((rc = from_files(ch, out)) != 0) {
		if (rc < 0)
			ember__aws_creds_clear(out);
		return rc < 0 ? rc : 0;
	}
	/* 3, 4: cached while fresh */
	if (ch->have_cached && ch->cached.expires - REFRESH_AHEAD_S > (int64_t)time(NULL))
		return ember__aws_creds_copy(out, &ch->cached);
	ember__aws_chain_fini(ch);
	int absent = 0;
	if (e->container_relative_uri || e->container_full_uri)
		rc = from_container(ch, out, cancel);
	else
		rc = from_imds(ch, out, cancel, &absent);
	if (rc) {
		ember__aws_creds_clear(out);
		if (absent) {
			char why[EMBER_ERROR_MAX];
			snprintf(why, sizeof(why), "%s", ember_last_error());
			return ember__error(EMBER_ERR_INVALID, "no AWS credentials found: not in the "
					    "environment (AWS_ACCESS_KEY_ID), not in the shared files "
					    "for profile \"%s\", no container credentials, and no "
					    "instance role (%s)", ch->profile, why);
		}
		return rc;
	}
	if ((rc = ember__aws_creds_copy(&ch->cached, out))) {
		ember__aws_creds_clear(out);
		return rc;
	}
	ch->have_cached = 1;
	return 0;
}

static int valid_region(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 40)
		return 0;
	for (const char *p = r; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-')
			return 0;
	return 1;
}

int ember__aws_region(const ember__aws_chain *ch, int allow_imds, char *out, size_t cap,
		      const _Atomic int *cancel)
{
	const ember__aws_env *e = ch->env;
	const char *v = e->region ? e->region : e->default_region;
	const char *from = e->region ? "AWS_REGION" : "AWS_DEFAULT_REGION";
	if (v) {
		if (!valid_region(v))
			return ember__error(EMBER_ERR_INVALID, "%s \"%.64s\" is not a region name", from, v);
		snprintf(out, cap, "%s", v);
		return 0;
	}
	char path[1024], section[160], r[64];
	file_path(e, e->config_file, "config", path, sizeof(path));
	snprintf(section, sizeof(section), "%s%s", strcmp(ch->profile, "default") ? "profile " : "",
		 ch->profile);
	int rc = path[0] ? ember__aws_ini_get(path, section, "region", r, sizeof(r)) : 0;
	if (rc < 0)
		return rc;
	if (rc > 0) {
		if (!valid_region(r))
			return ember__error(EMBER_ERR_INVALID, "%s [%s]: region \"%s\" is not a region "
					    "name", path, section, r);
		snprintf(out, cap, "%s", r);
		return 0;
	}
	if (allow_imds) {
		ember__send_result res;
		int connected;
		if (ember__imds_get(e, "/latest/meta-data/placement/region", r, sizeof(r), cancel, &res,
				    &connected) == 0) {
			size_t n = strcspn(r, "\r\n ");
			r[n] = '\0';
			if (valid_region(r)) {
				snprintf(out, cap, "%s", r);
				return 0;
			}
		}
	}
	return ember__error(EMBER_ERR_INVALID, "no AWS region: set the S3 reporter's region, "
			    "AWS_REGION, or region in the config file for profile \"%s\"%s",
			    ch->profile, allow_imds ? " (IMDS did not give one either)" : "");
}
