/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostmeta.h - where the profiled process runs (EC2, ECS/Fargate, on
 * premises), for the S3 reporter's object keys: detection through IMDSv2
 * and the ECS task metadata endpoint, the parsers of their JSON answers,
 * and the key's {machine} part.
 *
 * Detection makes network requests, each bounded (1 s to connect, 2 s in
 * all), and runs only on the S3 reporter's uploader thread. Nothing here
 * is async-signal-safe.
 */
#ifndef EMBER_AWS_HOSTMETA_H
#define EMBER_AWS_HOSTMETA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "aws/awsenv.h"
#include "emberprof.h"

typedef struct ember__hostmeta {
	ember_host_kind kind;
	char account[32];
	char region[32];
	char instance_id[64];
	char instance_type[64];
	char task_arn[256];
	char cluster_arn[256];
	double cpu_limit;
	uint64_t memory_limit_mb;
} ember__hostmeta;

/* Copies an application-given ember_host_metadata (checked: EC2 needs an
 * instance id, FARGATE a task ARN). 0 or EMBER_ERR_INVALID with a message. */
int ember__hostmeta_from_public(ember__hostmeta *out, const ember_host_metadata *in);

/*
 * The key's {machine} part: ec2_<instance id>_, ecs_<task arn>_, onprem__
 * or unknown__ ('/' and '_' in the id or ARN become '-'). DETECT (not
 * yet known) gives unknown__.
 */
void ember__hostmeta_machine(const ember__hostmeta *h, char *out, size_t cap);

/* Parses an EC2 instance identity document. 0, or EMBER_ERR_FORMAT with a
 * message naming the problem (not JSON, a field missing or not a string). */
int ember__hostmeta_parse_ec2(const char *json, size_t len, ember__hostmeta *out);

/* Parses an ECS task metadata (v4 "/task") answer: Cluster, TaskARN,
 * Limits{CPU,Memory}; account and region come from the task ARN. */
int ember__hostmeta_parse_ecs(const char *json, size_t len, ember__hostmeta *out);

/* Outcome of one detection. */
enum {
	EMBER__DETECT_FOUND = 0,   /* EC2 or ECS: *out filled */
	EMBER__DETECT_ABSENT = 1,  /* no IMDS answered and no ECS endpoint: on premises */
	EMBER__DETECT_FAILED = 2   /* a metadata service answered, wrongly or too slowly */
};

/*
 * Detects the host: IMDSv2 instance identity, else the ECS task metadata.
 * `why` receives what went wrong for a FAILED outcome. A nonzero *cancel
 * stops waiting early.
 */
int ember__hostmeta_detect(const ember__aws_env *env, ember__hostmeta *out, char *why, size_t cap,
			   const _Atomic int *cancel);

#endif
