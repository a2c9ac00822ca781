/* SPDX-License-Identifier: Apache-2.0 */
/*
 * credentials.h - AWS credentials and region for the S3 reporter, from
 * the standard chain, in the AWS SDKs' order:
 *   1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *      AWS_SESSION_TOKEN;
 *   2. the shared files for the profile (options, AWS_PROFILE, "default"):
 *      AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials ([name]), then
 *      AWS_CONFIG_FILE or ~/.aws/config ([profile name], or [default]);
 *   3. ECS container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 *      (against http://169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI
 *      (https, or http to a loopback or ECS/EKS address), with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE] as Authorization;
 *   4. the EC2 instance role through IMDSv2.
 * Credentials that expire (3, 4) are cached and fetched again 5 minutes
 * before their Expiration, or at once when the caller forces it (S3 said
 * ExpiredToken). The others are read again at each call, so rotated keys
 * in the files are picked up.
 *
 * Every network lookup is bounded (awsenv.h) and runs on the caller's
 * thread: the S3 reporter's uploader. Nothing here is async-signal-safe.
 */
#ifndef EMBER_AWS_CREDENTIALS_H
#define EMBER_AWS_CREDENTIALS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "aws/awsenv.h"

typedef struct ember__aws_creds {
	char access_key_id[128];
	char secret[256];
	char *token;          /* session token, malloc'd, or NULL */
	int64_t expires;      /* Unix seconds; 0: does not expire */
	const char *source;   /* static: "environment", "shared credentials file", ... */
} ember__aws_creds;

/* Wipes and frees. */
void ember__aws_creds_clear(ember__aws_creds *c);

/* Copies src into dst (dst cleared first). 0 or EMBER_ERR_NOMEM. */
int ember__aws_creds_copy(ember__aws_creds *dst, const ember__aws_creds *src);

typedef struct ember__aws_chain {
	const ember__aws_env *env; /* borrowed */
	char profile[128];
	ember__aws_creds cached;   /* expiring credentials (container, instance role) */
	int have_cached;
} ember__aws_chain;

/* Sets up a chain; `profile` NULL: AWS_PROFILE, else "default". */
int ember__aws_chain_init(ember__aws_chain *ch, const ember__aws_env *env, const char *profile);
void ember__aws_chain_fini(ember__aws_chain *ch);

/*
 * Resolves credentials into *out (the caller clears it). `force` drops
 * cached ones first. Returns 0, or a negative ember_err with the reason
 * (every source tried) in the thread's error message.
 */
int ember__aws_chain_get(ember__aws_chain *ch, int force, ember__aws_creds *out,
			 const _Atomic int *cancel);

/*
 * The region: AWS_REGION, AWS_DEFAULT_REGION, the profile's "region" in
 * the config file, then (if allow_imds) IMDS placement/region. 0, or
 * EMBER_ERR_INVALID when none is found.
 */
int ember__aws_region(const ember__aws_chain *ch, int allow_imds, char *out, size_t cap,
		      const _Atomic int *cancel);

/*
 * Looks `key` up in `section` of an AWS shared file (INI). Section names
 * are matched exactly; "[profile x]" is what the config file uses. Returns
 * 1 if found (value in out, trimmed), 0 if not (also when the file does
 * not exist), or a negative ember_err when the file exists but cannot be
 * read or a line is malformed.
 */
int ember__aws_ini_get(const char *path, const char *section, const char *key, char *out,
		       size_t cap);

/* Parses the INI text itself (the fuzz target's entry). */
int ember__aws_ini_get_text(const char *text, size_t len, const char *section, const char *key,
			    char *out, size_t cap);

/* Parses a credentials JSON answer (ECS container / IMDS role):
 * AccessKeyId, SecretAccessKey, Token, Expiration. */
int ember__aws_parse_creds_json(const char *what, const char *text, size_t len,
				ember__aws_creds *out);

/* ISO 8601 UTC ("2026-11-30T15:04:05Z", fractions allowed) to Unix seconds; -1 if bad. */
int64_t ember__aws_parse_time(const char *s);

#endif
