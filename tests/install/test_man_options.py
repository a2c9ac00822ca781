#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_man_options.py - the man page, `emberprof help` and docs/CONFIG.md
must tell the same story.

docs/man/emberprof.1 is the one source of the manual; this test fails, naming
what differs, when
  - the commands listed by `emberprof help` are not the man page's COMMANDS;
  - a command's long options in `emberprof help CMD` differ from those in its
    man section, or from those in its "### emberprof CMD" section of
    docs/CONFIG.md;
  - the EMBERPROF_* variables named in docs/CONFIG.md differ from those in
    the man page, or from the rows of the table of variables
    (src/agent/options.c, which also decides what draws an "unknown
    variable" warning from `emberprof run`);
  - the variables `emberprof help run` names are not all documented;
  - every function emberprof.h exports is not named in emberprof(3).
Usage: test_man_options.py EMBERPROF SRCDIR
"""
import re
import subprocess
import sys

emberprof, src = sys.argv[1], sys.argv[2]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def help_text(*args):
    return subprocess.run([emberprof, "help", *args], check=True, capture_output=True,
                          text=True).stdout


def long_opts(text):
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))


def compare(what, a_name, a, b_name, b):
    if a - b:
        fail(f"{what}: in {a_name} but not in {b_name}: {' '.join(sorted(a - b))}")
    if b - a:
        fail(f"{what}: in {b_name} but not in {a_name}: {' '.join(sorted(b - a))}")


man = open(f"{src}/docs/man/emberprof.1").read()
man_plain = man.replace("\\-", "-")
config = open(f"{src}/docs/CONFIG.md").read()

# Commands.
top = help_text()
block = top.split("Commands:", 1)[1].split("\n\n", 1)[0]
commands = set(re.findall(r"^  ([a-z]+)\b", block, re.M))
if not {"run", "top", "version", "help"} <= commands:
    fail(f"`emberprof help` lists too few commands: {sorted(commands)}")
man_cmds_block = man_plain.split(".SH COMMANDS", 1)[1].split("\n.SH ", 1)[0]
sections = re.split(r"^\.SS ", man_cmds_block, flags=re.M)[1:]
man_sections = {s.split("\n", 1)[0].strip(): s for s in sections}
compare("commands", "`emberprof help`", commands, "emberprof(1)", set(man_sections))

# Each command's options.
for cmd in sorted(commands - {"help"}):
    h = long_opts(help_text(cmd))
    if cmd in man_sections:
        compare(f"options of {cmd}", f"`emberprof help {cmd}`", h, "emberprof(1)",
                long_opts(man_sections[cmd]))
    m = re.search(r"^### emberprof " + cmd + r"\b.*?$(.*?)(?=^##)", config, re.M | re.S)
    if not m:
        fail(f"docs/CONFIG.md has no '### emberprof {cmd}' section")
        continue
    # The options are the first cells of the section's tables (its prose
    # may mention other commands' options).
    cells = "\n".join(line.split("|")[1] for line in m.group(1).splitlines()
                      if line.startswith("|") and not line.startswith("|---"))
    compare(f"options of {cmd}", f"`emberprof help {cmd}`", h, "docs/CONFIG.md table",
            long_opts(cells))

# EMBERPROF_* variables.
var_re = r"\bEMBERPROF_[A-Z0-9_]*[A-Z0-9]\b"
doc_vars = set(re.findall(var_re, config))
compare("variables", "docs/CONFIG.md", doc_vars, "emberprof(1)", set(re.findall(var_re, man_plain)))
table = open(f"{src}/src/agent/options.c").read()
rows = set(re.findall(r'\.name = "(EMBERPROF_[A-Z0-9_]+)"', table))
if len(rows) < 20:
    fail("src/agent/options.c: found no table of variables")
else:
    compare("variables", "docs/CONFIG.md", doc_vars, "the table of variables (src/agent/options.c)",
            rows)
missing = set(re.findall(var_re, help_text("run"))) - doc_vars
if missing:
    fail(f"`emberprof help run` names undocumented variables: {' '.join(sorted(missing))}")

# The API page names every exported function.
api = open(f"{src}/include/emberprof.h").read()
exported = set(re.findall(r"^EMBER_API\s[^;(]*?\b(ember_[a-z0-9_]+)\s*\(", api, re.M))
page3 = open(f"{src}/docs/man/emberprof.3").read().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
absent = {f for f in exported if not re.search(r"\b" + f + r"\b", page3)}
if len(exported) < 20:
    fail(f"found only {len(exported)} exported functions in emberprof.h")
if absent:
    fail(f"emberprof(3) does not name: {' '.join(sorted(absent))}")

if failures:
    sys.exit(1)
print(f"man pages agree: {len(commands)} commands, {len(doc_vars)} variables, "
      f"{len(exported)} API functions")
