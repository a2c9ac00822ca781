# SPDX-License-Identifier: Apache-2.0
# test_sqlite3.sh - sqlite3: a recursive query and an aggregate.
. "$(dirname "$0")/lib.sh"
need sqlite3
# sqlite3VdbeExec is internal (not in the stripped library's symbol
# table); sqlite3_step, which calls it, is exported.
realprog sqlite3 -H 'sqlite3_step' -- sqlite3 :memory: "
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
INSERT INTO t SELECT x, hex(x * 2654435761) FROM c;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(a % 97), max(b) FROM t WHERE b LIKE '%A%';"
done_tests
