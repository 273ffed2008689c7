#!/usr/bin/python3
"""check_docs.py — the documentation checks that `make test` runs
(tests/test_docs.sh). Python 3 standard library only.

  paths        README.md, docs/*.md, examples/README.md and doc/lockstep.1,
               and the comments of every tracked C, shell, Python and make
               file, may name only repository paths that exist. A repository
               path is a token that starts with a top-level folder and names a
               file (has an extension), or a bare name ending in .md (resolved
               against the checkout and the naming file's folder). Tokens with
               a glob or a placeholder are allowed, and so is golden/CHANGES,
               an append-only history log that is not read.
  dates        README.md and docs/*.md hold no date (YYYY-MM-DD) and no clock
               time (HH:MM, optionally UTC), except in the rows of a markdown
               table whose header has a column named like "measured on", or in
               a table row whose first cell says "measured on".
  transcripts  every ```console block of README.md and docs/*.md is run and
               its output compared (the convention is below).

One line per offence, FILE:LINE first; exit status 1 when anything is found,
2 on bad usage, else 0.

Console sessions: all console blocks of one markdown file run in order in one
fresh empty temporary directory, with `lockstep` on PATH (the binary of
--bin, else $LOCKSTEP_BIN, else build/lockstep under the root) and
LOCKSTEP_ROOT set to the root. A line starting with "$ " is a command for
/bin/sh -c (a line ending in " \\" continues on the next); the lines up to
the next command are its expected output, stdout and stderr together. A line
that is just "..." matches zero or more whole lines; "..." inside a line
matches any text within that line. The exit status is not compared, but the
previous command's status is what "$?" expands to. The first block of a file
that differs is shown as a unified diff of expected against got, and the rest
of that file is not run (later blocks may build on it).

Usage: check_docs.py [--root DIR] [--bin PATH] [paths|dates|transcripts|all] [FILE...]
With FILEs (paths relative to the root, or absolute), only those are checked.
"""

import difflib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize

TOP = ("base", "include", "reduce", "record", "engine", "tools", "tests", "docs", "doc", "examples",
       "golden", "data", ".ci")
EXEMPT = {"golden/CHANGES"}
COMMAND_TIMEOUT = 120   # seconds; a hang fails the block instead of the suite

# A repository path: a top-level folder at the start of a token (not inside a
# longer path such as $(BUILD)/tests/x or an absolute path), then a path.
PATH_RE = re.compile(r"(?<![\w./*$-])((?:%s)/[\w.+/*${}<>\u2026-]*)" % "|".join(re.escape(t) for t in TOP))
# A bare markdown file name.
BARE_MD_RE = re.compile(r"(?<![\w./*$<{-])([\w][\w.-]*\.md)(?![\w/-])")
PLACEHOLDER_RE = re.compile(r"[*${}\u2026]|<[\w-]+>")
EXT_RE = re.compile(r"\.[A-Za-z0-9_]+$")

DATE_RE = re.compile(r"(?<![\w-])\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?![\w-])")
TIME_RE = re.compile(r"(?<![\w:.])([01]?\d|2[0-3]):[0-5]\d(:[0-5]\d)?(?![\w:])(\s*UTC)?")


def doc_files(root):
    """README.md, docs/*.md, examples/README.md, doc/lockstep.1 that exist."""
    out = ["README.md"]
    if os.path.isdir(os.path.join(root, "docs")):
        out += sorted("docs/" + f for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    out += ["examples/README.md", "doc/lockstep.1"]
    return [f for f in out if os.path.isfile(os.path.join(root, f))]


def markdown_files(root):
    return [f for f in doc_files(root) if f.endswith(".md") and not f.startswith("examples/")]


def is_code(rel):
    base = os.path.basename(rel)
    return base == "Makefile" or base.endswith((".c", ".h", ".sh", ".py", ".mk"))


def tracked_files(root):
    """The checkout's tracked files (git ls-files), else every file below the
    root outside .git and build folders (a copy without git)."""
    try:
        r = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
        files = [f for f in r.stdout.decode("utf-8", "replace").split("\0") if f]
        if files:
            return sorted(f for f in files if os.path.isfile(os.path.join(root, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    out = []
    for d, dirs, files in os.walk(root):
        rel_d = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if x != ".git" and not (rel_d == "." and x.startswith("build"))]
        for f in files:
            out.append(os.path.normpath(os.path.join(rel_d, f)))
    return sorted(out)


# ---- comments of code files: the text is kept, everything else blanked ----

def blank(text):
    return re.sub(r"[^\n]", " ", text)


def c_comments(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(blank(text[i:j]))
            i = j
        else:
            out.append(c if c == "\n" else " ")
            i += 1
    return "".join(out)


HEREDOC_RE = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w]*)\1")


def hash_comments(text, heredocs):
    """Shell, make: '#' at the start of a word, outside quotes, to the end of
    the line; here-document bodies (shell) are data, not comments."""
    out = []
    lines = text.split("\n")
    end_word = None
    for line in lines:
        if end_word is not None:
            out.append(blank(line))
            if line.strip() == end_word:
                end_word = None
            continue
        kept = [" "] * len(line)
        quote = None
        cstart = len(line)
        i = 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\" and quote == '"':
                    i += 2
                    continue
                if c == quote:
                    quote = None
            elif c == "\\":
                i += 2
                continue
            elif c in "\"'":
                quote = c
            elif c == "#" and (i == 0 or line[i - 1] in " \t;(|&"):
                kept[i:] = line[i:]
                cstart = i
                break
            i += 1
        out.append("".join(kept))
        if heredocs:
            m = HEREDOC_RE.search(line[:cstart])
            if m:
                end_word = m.group(2)
    return "\n".join(out)


def py_comments(text):
    """Python: # comments and triple-quoted strings (docstrings)."""
    lines = text.split("\n")
    kept = [[" "] * len(l) for l in lines]
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))):
                (r0, c0), (r1, c1) = tok.start, tok.end
                for r in range(r0, r1 + 1):
                    a = c0 if r == r0 else 0
                    b = c1 if r == r1 else len(lines[r - 1])
                    kept[r - 1][a:b] = lines[r - 1][a:b]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return hash_comments(text, False)
    return "\n".join("".join(k) for k in kept)


def comment_text(rel, text):
    base = os.path.basename(rel)
    if base.endswith((".c", ".h")):
        return c_comments(text)
    if base.endswith(".py"):
        return py_comments(text)
    return hash_comments(text, base.endswith(".sh"))


def roff_plain(text):
    """doc/lockstep.1: font escapes removed, so \\fBdocs/x.md\\fR is a token."""
    text = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", text)
    return text.replace("\\-", "-").replace("\\&", "")


# ---- check (a): paths ----

def path_offences(root, rel, text):
    found = []
    here = os.path.dirname(rel)
    for ln, line in enumerate(text.split("\n"), 1):
        for m in PATH_RE.finditer(line):
            tok = m.group(1)
            if PLACEHOLDER_RE.search(tok):
                continue
            tok = re.split(r"[<>]", tok)[0].rstrip(".-/")
            if tok in EXEMPT or not EXT_RE.search(os.path.basename(tok)):
                continue
            if not os.path.exists(os.path.join(root, tok)):
                found.append((ln, tok))
        for m in BARE_MD_RE.finditer(line):
            tok = m.group(1)
            if os.path.exists(os.path.join(root, tok)) or os.path.exists(os.path.join(root, here, tok)):
                continue
            found.append((ln, tok))
    return found


def check_paths(root, files):
    bad = 0
    docs = set(doc_files(root))
    for rel in files:
        try:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print("%s: cannot be read: %s" % (rel, e.strerror))
            bad += 1
            continue
        if rel.endswith(".1"):
            text = roff_plain(text)
        elif is_code(rel) and rel not in docs:
            text = comment_text(rel, text)
        for ln, tok in path_offences(root, rel, text):
            print("%s:%d: names %s, which does not exist" % (rel, ln, tok))
            bad += 1
    return bad


# ---- check (b): dates ----

def check_dates(root, files):
    bad = 0
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        allowed = False   # inside a table whose header has a "measured on" column
        in_table = False
        for ln, line in enumerate(lines, 1):
            if line.lstrip().startswith("|"):
                cells = line.strip().strip("|").split("|")
                if not in_table:
                    in_table = True
                    allowed = any(re.search(r"measured\s+on", cell, re.I) for cell in cells)
                # A table may instead close with a row whose first cell says
                # "measured on": that row's cells are the table's date cells.
                if allowed or re.match(r"\s*measured\s+on\b", cells[0], re.I):
                    continue
            else:
                in_table = False
                allowed = False
            for what, rx in (("a date", DATE_RE), ("a clock time", TIME_RE)):
                m = rx.search(line)
                if m:
                    print("%s:%d: holds %s, %s (dates and times belong in a table with a "
                          "\"measured on\" column or row)" % (rel, ln, what, m.group(0).strip()))
                    bad += 1
    return bad


# ---- check (c): transcripts ----

def console_blocks(text):
    """[(line of the opening fence, [lines])] of the ```console blocks."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*(\S*)", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3)
        start = i + 1
        j = i + 1
        body = []
        while j < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if info == "console":
            blocks.append((start, body))
        i = j + 1
    return blocks


def parse_session(body):
    """[(command, [expected lines])] of one block; lines before the first
    command are expected output of nothing (they must be empty)."""
    steps = []
    i = 0
    pre = []
    while i < len(body) and not body[i].startswith("$ "):
        pre.append(body[i])
        i += 1
    if pre:
        steps.append((None, pre))
    while i < len(body):
        cmd = [body[i][2:]]
        while cmd[-1].endswith(" \\") and i + 1 < len(body):
            i += 1
            cmd.append(body[i])
        i += 1
        exp = []
        while i < len(body) and not body[i].startswith("$ "):
            exp.append(body[i])
            i += 1
        steps.append(("\n".join(cmd), exp))
    return steps


def line_matches(pat, got):
    if "..." not in pat:
        return pat == got
    rx = ".*".join(re.escape(p) for p in pat.split("..."))
    return re.fullmatch(rx, got, re.S) is not None


def lines_match(exp, got):
    """exp against got, a line of "..." matching zero or more whole lines."""
    memo = {}

    def at(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(exp):
            r = j == len(got)
        elif exp[i] == "...":
            r = any(at(i + 1, k) for k in range(j, len(got) + 1))
        else:
            r = j < len(got) and line_matches(exp[i], got[j]) and at(i + 1, j + 1)
        memo[key] = r
        return r
    return at(0, 0)


def output_lines(data):
    text = data.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def lockstep_bin(root, given):
    b = given or os.environ.get("LOCKSTEP_BIN") or os.path.join(root, "build", "lockstep")
    return os.path.abspath(b)


def run_file(root, rel, binary):
    """Runs the console blocks of one file; 0 when all match, else 1 after the diff."""
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        blocks = console_blocks(f.read())
    if not blocks:
        return 0
    if not os.access(binary, os.X_OK):
        print("%s:%d: cannot run its console blocks: %s is not an executable (build it first)"
              % (rel, blocks[0][0], binary))
        return 1
    work = tempfile.mkdtemp(prefix="lockstep-docs-")
    bindir = tempfile.mkdtemp(prefix="lockstep-docs-bin-")
    try:
        os.symlink(binary, os.path.join(bindir, "lockstep"))
        env = dict(os.environ)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        env["LOCKSTEP_ROOT"] = os.path.abspath(root)
        env["LOCKSTEP_BIN"] = binary
        # The sessions show what a user sees at a terminal, where CI is not
        # set; under CI `golden update` refuses to run. The sessions write
        # only inside their own temporary directory, so nothing of the
        # checkout can be rewritten this way.
        env.pop("CI", None)
        status = 0
        t0 = time.monotonic()
        for start, body in blocks:
            expected, got, ok = [], [], True
            for cmd, exp in parse_session(body):
                if cmd is None:
                    expected += exp
                    ok = ok and not exp
                    continue
                shown = ["$ " + l for l in cmd.split("\n")[:1]] + cmd.split("\n")[1:]
                expected += shown + exp
                got += shown
                try:
                    r = subprocess.run(["/bin/sh", "-c", "(exit %d)\n%s" % (status, cmd)], cwd=work, env=env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       timeout=COMMAND_TIMEOUT)
                    out, status = output_lines(r.stdout), r.returncode
                except subprocess.TimeoutExpired as e:
                    out, status = output_lines(e.stdout or b"") + ["(killed after %d s)" % COMMAND_TIMEOUT], 124
                # A command whose output matches shows as expected, so the
                # diff points at the commands that differ.
                if lines_match(exp, out):
                    got += exp
                else:
                    got += out
                    ok = False
            if not ok:
                print("%s:%d: the console block's output differs (expected, got):" % (rel, start))
                for l in difflib.unified_diff(expected, got, "%s:%d expected" % (rel, start),
                                              "%s:%d got" % (rel, start), lineterm=""):
                    print(l)
                return 1
        secs = time.monotonic() - t0
        print("%s: %d console block%s as shown (%.1f s)" % (rel, len(blocks), "" if len(blocks) == 1 else "s", secs),
              file=sys.stderr)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(bindir, ignore_errors=True)


def check_transcripts(root, files, binary):
    return sum(run_file(root, rel, binary) for rel in files)


def main(argv):
    root = os.environ.get("LOCKSTEP_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    binary = None
    what = "all"
    files = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("--root", "--bin") and args:
            v = args.pop(0)
            if a == "--root":
                root = v
            else:
                binary = v
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a in ("paths", "dates", "transcripts", "all") and what == "all" and not files:
            what = a
        elif a.startswith("-"):
            print("check_docs.py: unknown flag %s (see --help)" % a, file=sys.stderr)
            return 2
        else:
            files.append(a)
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        print("check_docs.py: --root %s is not a directory" % root, file=sys.stderr)
        return 2
    files = [os.path.relpath(os.path.abspath(f), root) if os.path.isabs(f) else f for f in files]
    binary = lockstep_bin(root, binary)
    bad = 0
    if what in ("paths", "all"):
        sel = files or sorted(set(doc_files(root)) | {f for f in tracked_files(root) if is_code(f)})
        bad += check_paths(root, sel)
    if what in ("dates", "all"):
        bad += check_dates(root, [f for f in files if f.endswith(".md")] if files else markdown_files(root))
    if what in ("transcripts", "all"):
        bad += check_transcripts(root, [f for f in files if f.endswith(".md")] if files else markdown_files(root),
                                 binary)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
