# SPDX-License-Identifier: Apache-2.0
# test_secrets.sh - no secret ever appears in emberprof's output
# Distinct secrets are planted through every option and variable
# that can carry one (docs/CONFIG.md: URLs' userinfo, bearer tokens, basic
# auth passwords, extra headers, AWS keys, session and container tokens,
# the shared credentials file), in runs that succeed (a fake Pyroscope
# server that checks the credentials, a refused S3 endpoint with spools)
# and runs refused for bad values; then every output of every run - stdout,
# stderr with the debug log, `emberprof version`, the output and spool
# directories, contents and file names - is searched for each secret.
. "$EMBER_TEST_SRCDIR/tests/host/host_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 is needed for the fake server"; exit 77; }
fake=$EMBER_TEST_SRCDIR/tests/pyroscope/fake_pyroscope.py

mkdir in outs            # in/: where secrets are planted (not searched)
S=SeCrEt                 # every secret starts with this, then its origin
secrets="${S}Userinfo ${S}OptToken ${S}OptHeader ${S}OptBasicPw ${S}EnvToken ${S}EnvBasicPw
${S}EnvHeader ${S}PyroToken ${S}PyroBasicPw ${S}PyroHeader ${S}AwsSecret ${S}AwsSession
${S}ContainerTok ${S}ContainerTokFile ${S}FileSecret ${S}FileSession ${S}S3Userinfo
${S}QueryTok ${S}BadToken ${S}BadHeader ${S}BadBasic ${S}BadJson ${S}NoColon"
printf '%s' "${S}ContainerTokFile" >in/container_token
cat >in/credentials <<EOC
[default]
aws_access_key_id = AKIAFILEKEYEXAMPLE
aws_secret_access_key = ${S}FileSecret
aws_session_token = ${S}FileSession
EOC
n=0
# run NAME ARGS... : one emberprof invocation, its outputs kept under outs/.
run() {
	n=$((n + 1))
	name=$1
	shift
	"$@" >"outs/$n-$name.out" 2>"outs/$n-$name.err"
	echo "$?" >"outs/$n-$name.rc"
}
port=$(refused_port)
prog="$H/host_exit exit 0.3 0"

# 1. Pyroscope, accepted: the server checks the bearer token, so the
#    planted secret provably travelled - and stays out of everything else.
python3 "$fake" --dir "$T/recv" --port-file "$T/ports" --lifetime 120 \
	--expect-bearer "${S}OptToken" >fake.out 2>&1 &
srv=$!
if wait_for ports; then
	data=$(cut -d' ' -f1 ports)
	run pyro-bearer env PYROSCOPE_AUTH_TOKEN="${S}PyroToken" \
		PYROSCOPE_HTTP_HEADERS="{\"X-Pyro-Key\": \"${S}PyroHeader\"}" \
		EMBERPROF_SERVER_SPOOL_DIR="$T/outs/spool1" \
		"$EMBERPROF" run --log-level debug -o "$T/outs/prof1" \
		--server "http://127.0.0.1:$data" --auth-token "${S}OptToken" \
		--header "X-Api-Key: ${S}OptHeader" -- $prog
	if grep -rqF "${S}OptToken" recv; then ok "the bearer token reached the server"; else fail "the token did not reach the server"; fi
	# Windows end on wall-clock multiples of 10 s, so a run that straddles
	# one uploads two windows (seen in CI): every window must be accepted.
	if grep -qE 'uploads: [1-9][0-9]* ok, 0 retried, 0 failed, 0 spooled, 0 dropped' \
		"outs/$n-pyro-bearer.err"; then
		ok "the server accepted every window"
	else
		fail "the server did not accept every window:"
		sed 's/^/    /' "outs/$n-pyro-bearer.err" >&2
	fi
else
	fail "the fake Pyroscope server did not start"
fi
kill $srv 2>/dev/null
wait $srv 2>/dev/null

# 2. Pyroscope, refused connection, basic auth and headers from the
#    environment, spooled.
run pyro-basic env EMBERPROF_SERVER_BASIC_AUTH_USER=alice \
	EMBERPROF_SERVER_BASIC_AUTH_PASSWORD="${S}EnvBasicPw" \
	PYROSCOPE_BASIC_AUTH_USER=bob PYROSCOPE_BASIC_AUTH_PASSWORD="${S}PyroBasicPw" \
	EMBERPROF_SERVER_HEADERS="X-Env-Key: ${S}EnvHeader" \
	EMBERPROF_SERVER_SPOOL_DIR="$T/outs/spool2" \
	"$EMBERPROF" run --log-level debug --server "http://127.0.0.1:$port" -- $prog
run pyro-envtoken env EMBERPROF_SERVER_AUTH_TOKEN="${S}EnvToken" \
	"$EMBERPROF" run --log-level debug --server "http://127.0.0.1:$port" -- $prog
run pyro-optbasic "$EMBERPROF" run --log-level debug --basic-auth "carol:${S}OptBasicPw" \
	--server "http://127.0.0.1:$port" -o "$T/outs/prof2" -- $prog

# 3. S3 to a refused endpoint, credentials from the environment, then from
#    the shared file, then from a container endpoint with its token.
s3="--s3-bucket profiles --s3-region us-east-1 --s3-endpoint http://127.0.0.1:$port"
awsoff="AWS_EC2_METADATA_DISABLED=true EMBERPROF_S3_HOST=onprem AWS_CONFIG_FILE=/nonexistent"
run s3-env env $awsoff AWS_ACCESS_KEY_ID=AKIAENVKEYEXAMPLE AWS_SECRET_ACCESS_KEY="${S}AwsSecret" \
	AWS_SESSION_TOKEN="${S}AwsSession" EMBERPROF_S3_SPOOL_DIR="$T/outs/spool3" \
	"$EMBERPROF" run --log-level debug $s3 -o "$T/outs/prof3" -- $prog
run s3-file env $awsoff AWS_SHARED_CREDENTIALS_FILE="$T/in/credentials" \
	EMBERPROF_S3_SPOOL_DIR="$T/outs/spool4" \
	"$EMBERPROF" run --log-level debug $s3 -- $prog
run s3-container env $awsoff AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$port/creds?token=${S}QueryTok" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN="${S}ContainerTok" \
	"$EMBERPROF" run --log-level debug $s3 -- $prog
run s3-container-file env $awsoff AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$port/creds" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$T/in/container_token" \
	"$EMBERPROF" run --log-level debug $s3 -- $prog

# 4. Values refused before the program starts: the message names the
#    problem without repeating the secret.
run bad-userinfo "$EMBERPROF" run --server "http://u:${S}Userinfo@127.0.0.1:$port" -- true
run bad-userinfo-space "$EMBERPROF" run --server "http://u:${S}Userinfo x@127.0.0.1:1" -- true
run bad-userinfo-scheme env PYROSCOPE_SERVER_ADDRESS="ftp://u:${S}Userinfo@127.0.0.1:1" "$EMBERPROF" run -- true
run bad-s3-userinfo "$EMBERPROF" run --s3-bucket profiles --s3-endpoint "ftp://k:${S}S3Userinfo@127.0.0.1:1" -- true
run bad-token env EMBERPROF_SERVER_AUTH_TOKEN="${S}BadToken
x" "$EMBERPROF" run --server "http://127.0.0.1:$port" -- true
run bad-header "$EMBERPROF" run --server "http://127.0.0.1:$port" --header "Authorization Bearer ${S}BadHeader" -- true
run bad-header-name "$EMBERPROF" run --server "http://127.0.0.1:$port" --header "X Key: ${S}BadHeader" -- true
run bad-basic "$EMBERPROF" run --server "http://127.0.0.1:$port" --basic-auth "${S}NoColon" -- true
run bad-basic-env env EMBERPROF_SERVER_BASIC_AUTH_PASSWORD="${S}BadBasic" "$EMBERPROF" run --server "http://127.0.0.1:$port" -- true
run bad-json env EMBERPROF_SERVER_HEADERS="{\"X-K\": \"${S}BadJson\", }" "$EMBERPROF" run --server "http://127.0.0.1:$port" -- true
run bad-json-env env PYROSCOPE_HTTP_HEADERS="{\"X-K\": ${S}BadJson}" PYROSCOPE_SERVER_ADDRESS="http://127.0.0.1:$port" "$EMBERPROF" run -- true
run version env EMBERPROF_SERVER_AUTH_TOKEN="${S}EnvToken" AWS_SECRET_ACCESS_KEY="${S}AwsSecret" "$EMBERPROF" version

# Each refused run was refused (status 2) and said why.
for f in outs/*-bad-*.rc; do
	check_exit "$(basename "$f" .rc) refused" 2 "$(cat "$f")"
done
for f in outs/*-bad-*.err; do
	if [ -s "$f" ]; then ok "$(basename "$f" .err): a message"; else fail "$(basename "$f" .err): no message"; fi
done
# The runs that should work did, and wrote where they were told.
for d in prof1 prof2 prof3; do
	if [ "$(profiles outs/$d)" -ge 1 ]; then ok "$d: profiles written"; else fail "$d: no profiles"; fi
done
for d in spool2 spool3 spool4; do
	c=$(ls outs/$d 2>/dev/null | grep -c '\.ems$')
	if [ "$c" -ge 1 ]; then ok "$d: $c spooled window(s)"; else fail "$d: nothing spooled"; fi
done

# The search: every file under outs/ (names and contents, gzip'd profiles
# unpacked) for every secret.
for s in $secrets; do
	hits=$(grep -rlaF -- "$s" outs; find outs -name "*$s*"; for z in $(find outs -name '*.gz'); do gzip -dc "$z" | grep -qaF -- "$s" && echo "$z"; done)
	if [ -n "$hits" ]; then
		fail "secret $s found in: $(echo $hits)"
		grep -rhaF -- "$s" outs | head -3 >&2
	else
		ok "$s appears nowhere"
	fi
done

done_tests
