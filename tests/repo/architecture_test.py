#!/usr/bin/env python3
"""ARCHITECTURE.md's module table is the code's: every top-level module is in it, and no
module links a weft library or includes a weft/<module>/ header that its row (and what
those modules use in turn) does not allow. The store's headers name no client's document.

Usage: architecture_test.py --root REPO
"""
import argparse
import os
import re
import sys

NOT_MODULES = {"tests", "dist", "debian", "scripts", "build", ".ci", ".git", "results"}


def read_table(path):
    """{module: (library, [modules it may use])} from the table under '## Modules'."""
    text = open(path).read()
    start = text.find("## Modules")
    if start < 0:
        raise SystemExit("FAIL: %s has no '## Modules' section" % path)
    rows = {}
    for line in text[start:].splitlines():
        m = re.match(r"\|\s*`([a-z_]+)/`\s*\|\s*([^|]*)\|\s*([^|]*)\|", line)
        if not m:
            if rows and not line.startswith("|"):
                break
            continue
        lib = re.findall(r"`(\w+)`", m.group(2))
        uses = [u.strip() for u in m.group(3).split(",") if u.strip() not in ("", "—", "-")]
        rows[m.group(1)] = (lib[0] if lib else None, uses)
    return rows


def closure(rows, module):
    seen, todo = set(), list(rows[module][1])
    while todo:
        u = todo.pop()
        if u in seen:
            continue
        seen.add(u)
        todo += rows.get(u, (None, []))[1]
    return seen | {"common"}


def cmake_links(path):
    """{target: [weft_* libraries it links]} from one CMakeLists.txt."""
    text = re.sub(r"#[^\n]*", "", open(path).read())
    out = {}
    for m in re.finditer(r"target_link_libraries\(\s*([\w$]+)([^)]*)\)", text):
        out.setdefault(m.group(1), []).extend(re.findall(r"\bweft_\w+", m.group(2)))
    return out


def source_lines(root, folder):
    """(path relative to root, line number, line) of every C++ source under root/folder."""
    for d, dirs, names in os.walk(os.path.join(root, folder)):
        for n in names:
            if n.endswith((".cpp", ".hpp", ".h")):
                p = os.path.join(d, n)
                for i, line in enumerate(open(p, errors="replace"), 1):
                    yield os.path.relpath(p, root), i, line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    root = a.root
    rows = read_table(os.path.join(root, "ARCHITECTURE.md"))
    bad = []
    if len(rows) < 10:
        bad.append("ARCHITECTURE.md's module table has %d rows" % len(rows))

    # Every module folder (one with a CMakeLists.txt) has a row, and every row a folder.
    folders = sorted(d for d in os.listdir(root)
                     if d not in NOT_MODULES and not d.startswith("build")
                     and os.path.isfile(os.path.join(root, d, "CMakeLists.txt")))
    for d in folders:
        if d not in rows:
            bad.append("%s/ is a module (it has a CMakeLists.txt) but ARCHITECTURE.md has no row for it" % d)
    for m in rows:
        if m not in folders:
            bad.append("ARCHITECTURE.md names %s/, which is no module folder" % m)
        for u in rows[m][1]:
            if u not in rows:
                bad.append("ARCHITECTURE.md: %s/ may use %r, which has no row" % (m, u))
    if bad:
        for b in bad:
            print("FAIL: " + b)
        return 1

    lib_of = {lib: m for m, (lib, _) in rows.items() if lib}
    links = checked_includes = 0
    for m in folders:
        allowed = closure(rows, m) | {m}
        # The link graph: what each target of this module links.
        for target, libs in cmake_links(os.path.join(root, m, "CMakeLists.txt")).items():
            for lib in libs:
                owner = lib_of.get(lib)
                if owner is None:
                    continue  # a target of the same module (bench tools, precompile helpers)
                links += 1
                if owner not in allowed:
                    bad.append("%s/CMakeLists.txt: %s links %s (%s/), which %s/ may not use (it may use: %s)"
                               % (m, target, lib, owner, m, ", ".join(sorted(allowed - {m}))))
        # The includes: weft/<module>/ headers from this module's sources.
        for p, i, line in source_lines(root, m):
            inc = re.match(r'\s*#\s*include\s*"weft/([a-z_]+)/', line)
            if not inc:
                continue
            checked_includes += 1
            if inc.group(1) in rows and inc.group(1) not in allowed:
                bad.append("%s:%d includes weft/%s/, which %s/ may not use" % (p, i, inc.group(1), m))

    # REST reads the published view and submits commands: of the modules below it that
    # hold live state, it includes only these headers (the view types, pure queries over
    # them, and the daemon's Command).
    view = {"sm/snapshot.hpp", "sm/options.hpp", "sm/sa_stats.hpp", "sm/path_query.hpp",
            "sm/lid_manager.hpp", "perf/view.hpp", "cc/view.hpp", "sa/path.hpp", "daemon/command.hpp",
            "daemon/partitions.hpp", "daemon/events.hpp"}
    rest_views = 0
    for p, i, line in source_lines(root, "rest"):
        inc = re.match(r'\s*#\s*include\s*"weft/((sm|sa|perf|cc|store|daemon)/[^"]+)"', line)
        if not inc:
            continue
        rest_views += 1
        if inc.group(1) not in view:
            bad.append("%s:%d includes weft/%s: REST includes only the published view and Command (%s)"
                       % (p, i, inc.group(1), ", ".join(sorted(view))))
    if rest_views < 5:
        bad.append("rest/ includes only %d view headers: is the check reading rest/?" % rest_views)

    # The composition root composes: only daemon/, app/ and the tests make a SubnetManager
    # (a variable, a member, make_unique or make_shared of one).
    makes = re.compile(r"\bSubnetManager\s+\w+\s*[;({]|make_(unique|shared)<\s*(sm::)?SubnetManager\s*>"
                       r"|optional<\s*(sm::)?SubnetManager\s*>")
    for m in folders:
        if m in ("daemon", "app"):
            continue
        for p, i, line in source_lines(root, m):
            if not line.lstrip().startswith("//") and makes.search(line):
                bad.append("%s:%d makes a SubnetManager: only daemon/ (daemon::Managers), app/ "
                           "and the tests compose the SM" % (p, i))

    # The store names none of its clients' documents: their owners do.
    docs = set()
    for owner in ("sm/include/weft/sm/documents.hpp", "rest/include/weft/rest/auth.hpp"):
        text = open(os.path.join(root, owner)).read()
        for body in re.findall(r"state_documents\(\)\s*\{(.*?)\n\}", text, re.S):
            docs |= set(re.findall(r'\{"([^"]+)",\s*0\d+\}', body))
    if len(docs) < 5:
        bad.append("found only %d documents named by the store's owners: %s" % (len(docs), sorted(docs)))
    inc_dir = os.path.join(root, "store", "include")
    for d, dirs, names in os.walk(inc_dir):
        for n in names:
            text = open(os.path.join(d, n)).read()
            for doc in sorted(docs):
                if doc in text:
                    bad.append("store/include/%s names %r, a document of one of its clients"
                               % (os.path.relpath(os.path.join(d, n), inc_dir), doc))

    for b in bad:
        print("FAIL: " + b)
    print("%d modules, %d weft links and %d weft includes checked against ARCHITECTURE.md; "
          "%d store documents named only by their owners; %d problems"
          % (len(folders), links, checked_includes, len(docs), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
