#!/usr/bin/env python3
"""weft's Debian package, built from the tree as `make deb` builds it, and checked as an
admin would meet it:

- it holds exactly the files it should (dpkg -c): the binary in /usr/sbin, the option
  file in /etc/weft as a conffile, the two systemd units, the manual page, and the
  copyright and changelog Debian requires;
- its Depends come from the libraries the binary links (dpkg-shlibdeps);
- systemd-analyze verify passes on weft.service and on an instance of weft@.service,
  with the package unpacked into a scratch root (its ExecStart binary and, through
  MANPATH, its manual page are the package's own), with no warning either;
- an instance's state directory, journal identifier and log are its own (%I in each);
- the packaged binary runs, its conffile checks clean, and its manual page documents
  every command.

The package is built in a scratch directory (scripts/make-deb.sh) and never installed
on this machine. Usage: package_test.py --root REPO --scratch DIR
"""
import argparse
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys

EXPECTED = {
    "./etc/weft/weft.conf",
    "./lib/systemd/system/weft.service",
    "./lib/systemd/system/weft@.service",
    "./usr/sbin/weft",
    "./usr/share/man/man8/weft.8.gz",
    "./usr/share/doc/weft/copyright",
    "./usr/share/doc/weft/changelog.Debian.gz",
}
INSTANCE = "0x0002c903000e0b72"

problems = []


def expect(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        problems.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--scratch", required=True)
    a = ap.parse_args()
    work = os.path.abspath(os.path.join(a.scratch, "package"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    b = run([os.path.join(a.root, "scripts", "make-deb.sh"), work], timeout=1500)
    if b.returncode != 0:
        print(b.stdout[-4000:] + b.stderr[-4000:])
        print("FAIL make-deb.sh exited %d" % b.returncode)
        return 1
    debs = glob.glob(os.path.join(work, "weft_*.deb"))
    expect(len(debs) == 1, "one weft_*.deb: %s" % [os.path.basename(d) for d in debs])
    if len(debs) != 1:
        return 1
    deb = debs[0]
    warnings = [line for line in (b.stdout + b.stderr).splitlines() if re.search(r"\bwarning\b", line, re.I)
                and "Manually-specified variables were not used" not in line]
    expect(not any("warning:" in w for w in warnings), "the package build has no compiler warning: %s" % warnings[:3])

    listing = run(["dpkg", "-c", deb], check=True).stdout
    files = {line.split()[-1] for line in listing.splitlines() if not line.startswith("d")}
    expect(files == EXPECTED, "dpkg -c lists exactly the expected files (extra %s, missing %s)"
           % (sorted(files - EXPECTED), sorted(EXPECTED - files)))
    expect(re.search(r"-rwxr-xr-x root/root\s+\d+ \S+ \S+ \./usr/sbin/weft\n", listing) is not None,
           "/usr/sbin/weft is an executable owned by root")
    conffiles = run(["dpkg-deb", "-e", deb, os.path.join(work, "control")], check=True) and \
        open(os.path.join(work, "control", "conffiles")).read().split()
    expect(conffiles == ["/etc/weft/weft.conf"], "conffiles: %s" % conffiles)
    depends = run(["dpkg-deb", "-f", deb, "Depends"], check=True).stdout
    for lib in ("libibumad3", "libibmad5", "libboost-program-options", "libfmt", "libyaml", "libhiredis"):
        expect(lib in depends, "Depends names %s" % lib)

    root = os.path.join(work, "root")
    run(["dpkg-deb", "-x", deb, root], check=True)
    # systemd-analyze resolves a unit's dependencies (sysinit.target, ...) in the root:
    # this machine's own units stand in for them.
    units = os.path.join(root, "lib", "systemd", "system")
    for u in os.listdir("/lib/systemd/system"):
        src, dst = os.path.join("/lib/systemd/system", u), os.path.join(units, u)
        if not os.path.exists(dst):
            if os.path.isdir(src) and not os.path.islink(src):
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst, follow_symlinks=False)
    # ExecReload's /bin/kill is procps' (Priority: important, on every Debian system).
    os.makedirs(os.path.join(root, "bin"), exist_ok=True)
    shutil.copy2("/bin/kill", os.path.join(root, "bin", "kill"))
    env = dict(os.environ, MANPATH=os.path.join(root, "usr", "share", "man"))
    for unit in ("weft.service", "weft@.service"):
        text = open(os.path.join(units, unit)).read()
        expect("\nExecReload=/bin/kill -HUP $MAINPID\n" in text, "%s reloads with SIGHUP" % unit)
    for unit in ("weft.service", "weft@%s.service" % INSTANCE):
        v = run(["systemd-analyze", "verify", "--root=" + root, unit], env=env, timeout=120)
        expect(v.returncode == 0 and not v.stderr.strip() and not v.stdout.strip(),
               "systemd-analyze verify %s: rc %d %s" % (unit, v.returncode, (v.stdout + v.stderr).strip()[:500]))
    # The check itself catches a broken unit: a unit whose binary is missing fails.
    broken = os.path.join(units, "weft-broken.service")
    open(broken, "w").write(open(os.path.join(units, "weft.service")).read().replace("/usr/sbin/weft", "/usr/sbin/nope"))
    v = run(["systemd-analyze", "verify", "--root=" + root, "weft-broken.service"], env=env, timeout=120)
    expect(v.returncode != 0, "systemd-analyze verify fails a unit whose ExecStart is missing")

    inst = open(os.path.join(units, "weft@.service")).read()
    execstart = re.search(r"^ExecStart=(.*)$", inst, re.M).group(1)
    for want in ("--guid %I", "--state-dir /var/lib/weft/%I", "--log-file -", "--config /etc/weft/weft.conf"):
        expect(want in execstart, "weft@.service ExecStart has %s" % want)
    for key, value in (("StateDirectory", "weft/%I"), ("ReadWritePaths", "/var/lib/weft/%I"),
                       ("SyslogIdentifier", "weft-%I"), ("Restart", "on-failure"),
                       ("DeviceAllow", "char-infiniband_mad rw"), ("ProtectSystem", "strict"),
                       ("DevicePolicy", "closed")):
        expect(re.search(r"^%s=%s$" % (key, re.escape(value)), inst, re.M) is not None,
               "weft@.service: %s=%s" % (key, value))
    main_unit = open(os.path.join(units, "weft.service")).read()
    expect(re.search(r"^ExecStart=/usr/sbin/weft sm --config /etc/weft/weft.conf --state-dir /var/lib/weft$",
                     main_unit, re.M) is not None, "weft.service runs weft sm on the first active port")
    for key, value in (("StateDirectory", "weft"), ("ReadWritePaths", "/var/lib/weft"), ("Restart", "on-failure"),
                       ("DeviceAllow", "char-infiniband_mad rw"), ("ProtectSystem", "strict")):
        expect(re.search(r"^%s=%s$" % (key, re.escape(value)), main_unit, re.M) is not None,
               "weft.service: %s=%s" % (key, value))

    weft = os.path.join(root, "usr", "sbin", "weft")
    ver = run([weft, "--version"])
    expect(ver.returncode == 0 and re.match(r"^weft \d+\.\d+\.\d+$", ver.stdout.strip()) is not None,
           "the packaged weft runs: %r" % ver.stdout.strip())
    chk = run([weft, "config", "check", os.path.join(root, "etc", "weft", "weft.conf"), "--strict"])
    expect(chk.returncode == 0, "the packaged weft.conf checks clean: %s" % chk.stdout.strip()[:300])
    man = gzip.open(os.path.join(root, "usr", "share", "man", "man8", "weft.8.gz"), "rt").read()
    expect(man.startswith(".\\\"") and re.search(r"^\.TH WEFT \"8\"", man, re.M) is not None, "weft.8 is a manual page")
    for cmd in ("sm", "sim", "topo", "route", "config", "roce check", "roce render", "roce diff", "roce collect",
                "roce apply"):
        expect('.SS "weft %s"' % cmd in man, "weft.8 documents weft %s" % cmd)
    for section in ("SYNOPSIS", "DESCRIPTION", "OPTIONS", "FILES", "COMMANDS", "SEE ALSO"):
        expect(re.search(r"^\.SH \"?%s\"?$" % section, man, re.M) is not None, "weft.8 has %s" % section)
    print("%d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
