#!/usr/bin/env python3
"""Every program the project's tests and scripts run comes from a Debian package that
scripts/install-deps.sh installs by default (or one every Debian system has).

It lists the executables that the Python tests and benchmarks (tests/, bench/, scripts/)
start through subprocess, and that the shell scripts, the Makefile's recipes and
debian/rules call. For each one it asks dpkg which package holds it, and fails when a
program is not installed at all, or comes from a package that is neither in
`install-deps.sh --list` nor Essential / Priority required. So a test that starts using
a new tool fails here, on any machine, until the install step names its package: a
machine that already has the tool from an earlier session cannot hide it.

Usage: deps_test.py --root REPO
"""
import argparse
import ast
import os
import re
import shlex
import shutil
import subprocess
import sys

# subprocess's and os's calls that start a program from an argument list.
SPAWNERS = {"subprocess": {"run", "Popen", "call", "check_call", "check_output"},
            "os": {"execvp", "execv", "spawnvp"}}
WRAPPERS = {"sudo", "$SUDO", "exec", "env", "nohup", "time"}


# ---- Python: the first element of a list literal given to a spawning call ----------------

def builtin_spawner(call):
    f = call.func
    return (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            and f.attr in SPAWNERS.get(f.value.id, ()))


def spawner_params(tree):
    """A file's functions that pass one of their parameters on as the command of a
    subprocess call, name -> index of that parameter (run(cmd, workdir, ...)); and its
    classes whose constructor keeps a parameter that a method then runs
    (Background(cmd, ...): self.cmd = cmd ... Popen(self.cmd))."""
    out = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        params = [a.arg for a in fn.args.args]
        for call in ast.walk(fn):
            if isinstance(call, ast.Call) and builtin_spawner(call) and call.args:
                first = call.args[0]
                if isinstance(first, ast.Name) and first.id in params:
                    out[fn.name] = params.index(first.id)
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        run_attrs = {c.args[0].attr for c in ast.walk(cls) if isinstance(c, ast.Call) and builtin_spawner(c)
                     and c.args and isinstance(c.args[0], ast.Attribute)}
        for init in cls.body:
            if not (isinstance(init, ast.FunctionDef) and init.name == "__init__"):
                continue
            params = [a.arg for a in init.args.args][1:]
            for n in ast.walk(init):
                if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in params
                        and any(isinstance(t, ast.Attribute) and t.attr in run_attrs for t in n.targets)):
                    out[cls.name] = params.index(n.value.id)
    return out


def imported_names(tree):
    """alias -> module name for `import m [as a]`, and name -> (module, name) for
    `from m import name [as a]`."""
    modules, names = {}, {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                modules[a.asname or a.name] = a.name
        elif isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                names[a.asname or a.name] = (n.module, a.name)
    return modules, names


def command_position(call, local, imported, spawners_of):
    """Which argument of `call` is a command list, or None when it starts no program."""
    if builtin_spawner(call):
        return 0
    modules, names = imported
    f = call.func
    if isinstance(f, ast.Name):
        if f.id in local:
            return local[f.id]
        if f.id in names:
            mod, name = names[f.id]
            return spawners_of.get(mod, {}).get(name)
        return None
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
        return spawners_of.get(modules[f.value.id], {}).get(f.attr)
    return None


def list_head(node, assigned):
    """The command name a list expression starts with, if it is written literally."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return list_head(node.left, assigned)
    if isinstance(node, ast.Name):
        return [h for v in assigned.get(node.id, []) for h in list_head(v, {})]
    if isinstance(node, ast.List) and node.elts:
        e = node.elts[0]
        if isinstance(e, ast.Constant) and isinstance(e.value, str):
            return [e.value]
    return []


def python_commands(path, spawners_of):
    tree = ast.parse(open(path).read(), path)
    local, imported = spawner_params(tree), imported_names(tree)
    found = []
    for fn in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        assigned = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        assigned.setdefault(t.id, []).append(n.value)
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            pos = command_position(call, local, imported, spawners_of)
            if pos is None or len(call.args) <= pos:
                continue
            for cmd in list_head(call.args[pos], assigned):
                if "/" not in cmd:  # a path is the project's own script or binary
                    found.append((cmd, "%s:%d" % (path, call.lineno)))
    return found


# ---- Shell: the first word of every simple command --------------------------------------

def bash_words():
    out = subprocess.run(["bash", "-c", "compgen -b; compgen -k"], capture_output=True, text=True)
    return set(out.stdout.split()) | {"[[", "]]", "[", "{", "}", "!", "function", "local"}


def shell_statements(text):
    """Logical lines of a script: comments and heredoc bodies dropped, continuations joined."""
    lines, heredoc, cur = [], None, ""
    for raw in text.splitlines():
        if heredoc:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        line = raw.strip()
        if line.startswith("#"):
            continue
        line = re.sub(r"\s#\s.*$", "", line)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if m:
            heredoc = m.group(1)
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        if re.search(r"=\([^)]*$", cur + line):
            cur += line + " "  # an array literal running over several lines
            continue
        lines.append(cur + line)
        cur = ""
    return lines


def substitutions(token):
    """The command text inside each $( ... ) of a token (nested ones too)."""
    out, i = [], 0
    while True:
        i = token.find("$(", i)
        if i < 0:
            return out
        depth, j = 1, i + 2
        while j < len(token) and depth:
            depth += {"(": 1, ")": -1}.get(token[j], 0)
            j += 1
        inner = token[i + 2:j - 1]
        out.append(inner)
        i += 2


def shell_commands_of(stmt, words, functions):
    lex = shlex.shlex(stmt, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        toks = list(lex)
    except ValueError:
        return []
    found, start, skip_next, in_array, i = [], True, False, False, 0
    while i < len(toks):
        t = toks[i]
        i += 1
        for inner in substitutions(t):
            found += shell_commands_of(inner, words, functions)
        if in_array:
            in_array = t != ")"
            continue
        if skip_next:
            skip_next = False
            continue
        if t and all(c in ";&|()<>" for c in t):
            if "<" in t or ">" in t:
                skip_next = True  # a redirection's target
                continue
            if t == "(" and i >= 2 and toks[i - 2].endswith("="):
                in_array = True  # NAME=( words ): an array, not a subshell
                continue
            start = True
            continue
        if not start:
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", t):
            continue  # an assignment before the command
        if t in WRAPPERS:
            continue
        if t.isdigit() and i < len(toks) and ("<" in toks[i] or ">" in toks[i]):
            continue  # a file descriptor number before its redirection
        if t == "timeout":
            i += 1  # its duration
            continue
        if t == "command":  # command -v NAME: a lookup, not a call
            start = False
            continue
        if t in ("if", "then", "else", "elif", "do", "while", "until", "!", "{"):
            continue
        if t == "for":
            while i < len(toks) and toks[i] not in (";", "do"):
                i += 1
            continue
        start = False
        if t in words or t in functions or t.startswith("$") or "/" in t or t.startswith("-"):
            continue
        found.append(t)
    return found


def shell_commands(path, text=None, words=None):
    text = open(path).read() if text is None else text
    functions = set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", text, re.M))
    found = []
    for stmt in shell_statements(text):
        for c in shell_commands_of(stmt, words, functions):
            found.append((c, path))
    return found


def make_recipes(path):
    """A Makefile's recipe lines as shell: make's $(VAR) become shell variables."""
    out = []
    for line in open(path):
        if line.startswith("\t"):
            line = line[1:].lstrip("@-")
            line = re.sub(r"\$\((\w+)\)", r"$\1", line)
            line = re.sub(r"\$\((?:abspath|dir|notdir) ([^)]*)\)", r"\1", line)
            out.append(line)
    return "".join(out)


# ---- Packages -----------------------------------------------------------------------------

SYSTEM_BIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def dpkg_owners(paths):
    """path -> the packages that ship it, for every path dpkg knows, in one dpkg-query
    call (one call per path made this test take minutes)."""
    out = {}
    if not paths:
        return out
    r = subprocess.run(["dpkg-query", "-S"] + sorted(paths), capture_output=True, text=True)
    for line in r.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        if path in paths:
            out.setdefault(path, set()).update(p.strip().split(":")[0] for p in pkgs.split(","))
    return out


def owners_of(exes):
    """exe -> the Debian packages that ship it in a system bin directory (whatever else
    on PATH, a pyenv's python3 say, may shadow it here); an alternative (/usr/bin/awk ->
    mawk) by the file it resolves to."""
    direct = {os.path.join(d, e) for e in exes for d in SYSTEM_BIN}
    found = dpkg_owners(direct)
    resolved = {p: os.path.realpath(p) for p in direct if p not in found and os.path.exists(p)}
    found_real = dpkg_owners(set(resolved.values()))
    out = {}
    for e in exes:
        pkgs = set()
        for d in SYSTEM_BIN:
            path = os.path.join(d, e)
            pkgs |= found.get(path, set()) | found_real.get(resolved.get(path, ""), set())
        out[e] = pkgs
    return out


def installed_closure(roots):
    """The listed packages, every package they depend on (Depends, Pre-Depends, through
    any alternative that is installed), and Essential or Priority required ones: what a
    Debian 12 system holds after install-deps.sh."""
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Status}\t${Essential}\t${Priority}\t"
                        "${Depends}, ${Pre-Depends}\t${Provides}\n"], capture_output=True, text=True, check=True)
    deps, provides, have = {}, {}, set()
    for line in r.stdout.splitlines():
        pkg, status, essential, prio, dep, prov = (line.split("\t") + [""] * 6)[:6]
        if not status.endswith("installed") or status.startswith("deinstall"):
            continue
        have.add(pkg)
        if essential == "yes" or prio == "required":
            roots = set(roots) | {pkg}
        deps[pkg] = [[re.split(r"[\s(:]", alt.strip())[0] for alt in group.split("|")]
                     for group in dep.split(",") if group.strip()]
        for p in prov.split(","):
            if p.strip():
                provides.setdefault(re.split(r"[\s(]", p.strip())[0], []).append(pkg)
    out, todo = set(), [p for p in roots if p in have]
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.add(p)
        for group in deps.get(p, []):
            for alt in group:
                for q in [alt] + provides.get(alt, []):
                    if q in have:
                        todo.append(q)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    os.chdir(root)
    listed = subprocess.run(["scripts/install-deps.sh", "--list"], capture_output=True, text=True, check=True)
    installs = set(listed.stdout.split())

    py, sh = [], []
    for top in ("tests", "bench", "scripts"):
        for d, _, files in os.walk(top):
            for f in sorted(files):
                p = os.path.join(d, f)
                if f.endswith(".py"):
                    py.append(p)
                elif f.endswith(".sh"):
                    sh.append(p)
    sh += [".ci/run"] + (["debian/rules"] if os.path.exists("debian/rules") else [])
    spawners_of = {os.path.splitext(os.path.basename(p))[0]: spawner_params(ast.parse(open(p).read(), p))
                   for p in py}
    words = bash_words()
    calls = []
    for p in py:
        calls += python_commands(p, spawners_of)
    for p in sh:
        text = make_recipes(p) if p.endswith("rules") else None
        calls += shell_commands(p, text, words)
    calls += shell_commands("Makefile", make_recipes("Makefile"), words)

    by_exe = {}
    for exe, where in calls:
        by_exe.setdefault(exe, []).append(where)
    known = set(subprocess.run(["apt-cache", "pkgnames"], capture_output=True, text=True,
                               check=True).stdout.split())
    unknown = [p for p in installs if p not in known]
    closure = installed_closure(installs)
    problems = ["install-deps.sh lists %s, which is no Debian package" % p for p in sorted(unknown)]
    owners = owners_of(set(by_exe))
    for exe in sorted(by_exe):
        pkgs = owners[exe]
        where = ", ".join(sorted(set(by_exe[exe]))[:3])
        good = sorted(pkgs & closure)
        if not pkgs:
            problems.append("%s: no installed Debian package ships it (called at %s); add its package "
                            "to scripts/install-deps.sh" % (exe, where))
        elif not good:
            problems.append("%s: from %s, which scripts/install-deps.sh does not install (called at %s)"
                            % (exe, ", ".join(sorted(pkgs)), where))
        else:
            print("ok  %-20s %-18s %s" % (exe, good[0], where))
    # The scan itself must see the programs it is known to need, or it checks nothing.
    for need in ("ibsim", "opensm", "smpquery", "redis-server", "cmake"):
        if need not in by_exe:
            problems.append("the scan found no call of %s: the scanner is broken" % need)
    for p in problems:
        print("FAIL " + p)
    print("%d programs called, %d problems" % (len(by_exe), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
