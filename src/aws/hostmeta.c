/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostmeta.c - host detection for the S3 reporter's keys (see hostmeta.h).
 *
 * Order, as the async-profiler agent: EC2 first (IMDSv2, the instance
 * identity document), then ECS (ECS_CONTAINER_METADATA_URI_V4 + "/task").
 * Unlike that agent, a failure never stops profiling; the reporter turns
 * the outcome into a key part and retries later (src/report/s3.c).
 */
#include "aws/hostmeta.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/dep_jansson.h"

#define DOC_MAX 8192
#define TASK_MAX (256 * 1024)

static int copy_str(const char *what, char *out, size_t cap, const char *s)
{
	if (!s || !*s)
		return ember__error(EMBER_ERR_INVALID, "host metadata: %s is required", what);
	size_t n = strlen(s);
	if (n >= cap)
		return ember__error(EMBER_ERR_INVALID, "host metadata: %s is longer than %zu bytes",
				    what, cap - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return ember__error(EMBER_ERR_INVALID, "host metadata: %s contains a space or "
					    "a control character", what);
	memcpy(out, s, n + 1);
	return 0;
}

static int copy_opt(const char *what, char *out, size_t cap, const char *s)
{
	return s && *s ? copy_str(what, out, cap, s) : 0;
}

int ember__hostmeta_from_public(ember__hostmeta *out, const ember_host_metadata *in)
{
	memset(out, 0, sizeof(*out));
	if (!in)
		return 0; /* DETECT */
	if (in->sz < offsetof(ember_host_metadata, kind) + sizeof(in->kind))
		return ember__error(EMBER_ERR_INVALID, "host metadata: sz is %zu; initialize it with "
				    "EMBER_HOST_METADATA_INIT", in->sz);
	ember_host_metadata m = EMBER_HOST_METADATA_INIT;
	memcpy(&m, in, in->sz < sizeof(m) ? in->sz : sizeof(m));
	int rc = 0;
	out->kind = m.kind;
	switch (m.kind) {
	case EMBER_HOST_DETECT:
	case EMBER_HOST_ONPREM:
	case EMBER_HOST_NONE:
		return 0;
	case EMBER_HOST_EC2:
		if ((rc = copy_str("ec2_instance_id", out->instance_id, sizeof(out->instance_id),
				   m.ec2_instance_id)) ||
		    (rc = copy_opt("ec2_instance_type", out->instance_type,
				   sizeof(out->instance_type), m.ec2_instance_type)))
			return rc;
		break;
	case EMBER_HOST_FARGATE:
		if ((rc = copy_str("ecs_task_arn", out->task_arn, sizeof(out->task_arn),
				   m.ecs_task_arn)) ||
		    (rc = copy_opt("ecs_cluster_arn", out->cluster_arn, sizeof(out->cluster_arn),
				   m.ecs_cluster_arn)))
			return rc;
		if (m.cpu_limit < 0 || isnan(m.cpu_limit))
			return ember__error(EMBER_ERR_INVALID, "host metadata: cpu_limit is negative");
		out->cpu_limit = m.cpu_limit;
		out->memory_limit_mb = m.memory_limit_mb;
		break;
	default:
		return ember__error(EMBER_ERR_INVALID, "host metadata: unknown kind %d", (int)m.kind);
	}
	if ((rc = copy_opt("aws_account_id", out->account, sizeof(out->account), m.aws_account_id)) ||
	    (rc = copy_opt("aws_region", out->region, sizeof(out->region), m.aws_region)))
		return rc;
	return 0;
}

static void sanitized(char *out, size_t cap, size_t *n, const char *s)
{
	for (; *s && *n + 1 < cap; s++)
		out[(*n)++] = *s == '/' || *s == '_' ? '-' : *s;
	out[*n] = '\0';
}

void ember__hostmeta_machine(const ember__hostmeta *h, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	switch (h->kind) {
	case EMBER_HOST_EC2:
		n = (size_t)snprintf(out, cap, "ec2_");
		sanitized(out, cap, &n, h->instance_id);
		break;
	case EMBER_HOST_FARGATE:
		n = (size_t)snprintf(out, cap, "ecs_");
		sanitized(out, cap, &n, h->task_arn);
		break;
	case EMBER_HOST_ONPREM:
		snprintf(out, cap, "onprem__");
		return;
	default:
		snprintf(out, cap, "unknown__");
		return;
	}
	if (n + 1 < cap) {
		out[n++] = '_';
		out[n] = '\0';
	}
}

int ember__hostmeta_parse_ec2(const char *text, size_t len, ember__hostmeta *out)
{
	static const char what[] = "EC2 instance identity document";
	json_t *j = ember__json_parse(what, text, len);
	if (!j)
		return EMBER_ERR_FORMAT;
	ember__hostmeta h;
	memset(&h, 0, sizeof(h));
	h.kind = EMBER_HOST_EC2;
	int rc;
	if ((rc = ember__json_str(what, j, "instanceId", h.instance_id, sizeof(h.instance_id))) ||
	    (rc = ember__json_str(what, j, "accountId", h.account, sizeof(h.account))) ||
	    (rc = ember__json_str(what, j, "region", h.region, sizeof(h.region))) ||
	    (rc = ember__json_str(what, j, "instanceType", h.instance_type,
				  sizeof(h.instance_type)))) {
		json_decref(j);
		return rc;
	}
	json_decref(j);
	*out = h;
	return 0;
}

/* arn:<partition>:ecs:<region>:<account>:task/... */
static int arn_field(const char *arn, int index, char *out, size_t cap)
{
	const char *p = arn;
	for (int i = 0; i < index; i++) {
		p = strchr(p, ':');
		if (!p)
			return -1;
		p++;
	}
	size_t n = strcspn(p, ":");
	if (n == 0 || n >= cap || !p[n])
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

int ember__hostmeta_parse_ecs(const char *text, size_t len, ember__hostmeta *out)
{
	static const char what[] = "ECS task metadata";
	json_t *j = ember__json_parse(what, text, len);
	if (!j)
		return EMBER_ERR_FORMAT;
	ember__hostmeta h;
	memset(&h, 0, sizeof(h));
	h.kind = EMBER_HOST_FARGATE;
	int rc;
	if ((rc = ember__json_str(what, j, "TaskARN", h.task_arn, sizeof(h.task_arn))) ||
	    (rc = ember__json_str(what, j, "Cluster", h.cluster_arn, sizeof(h.cluster_arn))))
		goto out;
	if (strncmp(h.task_arn, "arn:", 4) || arn_field(h.task_arn, 3, h.region, sizeof(h.region)) ||
	    arn_field(h.task_arn, 4, h.account, sizeof(h.account))) {
		rc = ember__error(EMBER_ERR_FORMAT, "%s: TaskARN \"%.200s\" is not an ARN "
				  "(arn:partition:ecs:region:account:task/...)", what, h.task_arn);
		goto out;
	}
	json_t *lim = json_object_get(j, "Limits");
	if (lim && json_is_object(lim)) {
		json_t *cpu = json_object_get(lim, "CPU"), *mem = json_object_get(lim, "Memory");
		if (cpu && json_is_number(cpu) && json_number_value(cpu) >= 0)
			h.cpu_limit = json_number_value(cpu);
		if (mem && json_is_integer(mem) && json_integer_value(mem) >= 0)
			h.memory_limit_mb = (uint64_t)json_integer_value(mem);
	}
	*out = h;
	rc = 0;
out:
	json_decref(j);
	return rc;
}

int ember__hostmeta_detect(const ember__aws_env *env, ember__hostmeta *out, char *why, size_t cap,
			   const _Atomic int *cancel)
{
	why[0] = '\0';
	ember__send_result res;
	int connected = 0, failed = 0;
	char *buf = malloc(TASK_MAX);
	if (!buf) {
		snprintf(why, cap, "out of memory");
		return EMBER__DETECT_FAILED;
	}
	int rc = ember__imds_get(env, "/latest/dynamic/instance-identity/document", buf, DOC_MAX,
				 cancel, &res, &connected);
	if (rc == 0) {
		if (ember__hostmeta_parse_ec2(buf, strlen(buf), out) == 0) {
			free(buf);
			return EMBER__DETECT_FOUND;
		}
		snprintf(why, cap, "%s", ember_last_error());
		failed = 1;
	} else if (rc == -1 && connected) {
		snprintf(why, cap, "%s", res.message);
		failed = 1;
	}
	if (env->ecs_metadata_uri_v4) {
		char url[1024];
		size_t bl = strlen(env->ecs_metadata_uri_v4);
		while (bl > 0 && env->ecs_metadata_uri_v4[bl - 1] == '/')
			bl--;
		snprintf(url, sizeof(url), "%.*s/task", (int)bl, env->ecs_metadata_uri_v4);
		ember__aws_lookup(env, "GET", url, NULL, 0, buf, TASK_MAX, cancel, &res, &connected);
		if (res.outcome == EMBER__SEND_OK) {
			if (ember__hostmeta_parse_ecs(buf, strlen(buf), out) == 0) {
				free(buf);
				return EMBER__DETECT_FOUND;
			}
			snprintf(why + strlen(why), cap - strlen(why), "%s%s", why[0] ? "; " : "",
				 ember_last_error());
		} else {
			snprintf(why + strlen(why), cap - strlen(why), "%sECS task metadata (GET %s): %s",
				 why[0] ? "; " : "", url, res.message);
		}
		failed = 1;
	}
	free(buf);
	return failed ? EMBER__DETECT_FAILED : EMBER__DETECT_ABSENT;
}
