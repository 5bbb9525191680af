#!/usr/bin/env python3
"""The README's main command as `make run` runs it: scripts/run-on-ibsim.sh brings weft
up as a daemon on ibsim with REST, prints the summary, the URL, the generated
credentials and three curl lines. Each curl line, run as printed, must work (the
third adds a GUID to a P_Key), and SIGINT (Ctrl-C) must stop weft and ibsim and remove
the scratch directory. Stopped by PID, also on failure."""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ibsim_bringup as b  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    # ASAN_OPTIONS: for a sanitizer build, under umad2sim's preload (see ibsim_bringup).
    env = dict(os.environ, WEFT_REST_PORT=str(port), ASAN_OPTIONS=b.ASAN_OPTIONS)
    p = subprocess.Popen([os.path.join(a.root, "scripts", "run-on-ibsim.sh"), a.weft, "ft2:leaves=4,spines=2,hosts=2"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    out = []
    failures = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            out.append(line)
            if line.startswith("== running"):
                break
        text = "".join(out)
        for want in (r"weft: SUBNET UP\n  fabric   6 switches, 8 CAs", r"iblinkinfo:\s+32 of 32 linked ports ACTIVE",
                     r"== REST API: http://127\.0\.0\.1:%d " % port):
            if not re.search(want, text):
                failures.append("output lacks /%s/" % want)
        curls = [l.strip() for l in out if l.startswith("curl ")]
        if len(curls) != 3:
            failures.append("three curl lines, got %d" % len(curls))
        for i, c in enumerate(curls):
            r = subprocess.run(c + " -w '\\n%{http_code}'", shell=True, capture_output=True, text=True, timeout=30)
            body, _, code = r.stdout.rpartition("\n")
            try:
                j = json.loads(body)
            except ValueError:
                j = None
            ok = code == "200" and j is not None
            if i == 0:
                ok = ok and j.get("state") == "MASTER"
            if i == 2:
                ok = ok and "generation" in j
            print("%s curl line %d: HTTP %s %s" % ("ok  " if ok else "FAIL", i + 1, code, body[:100]))
            if not ok:
                failures.append("curl line %d" % (i + 1))
        m = re.search(r"from (/tmp/weft-run\.\w+)/state/rest-admin-password", text)
        scratch = m.group(1) if m else None
        p.send_signal(signal.SIGINT)
        rest = p.communicate(timeout=30)[0]
        if "== stopped (weft and ibsim)" not in rest or p.returncode != 0:
            failures.append("Ctrl-C: rc %s, %r" % (p.returncode, rest[-300:]))
        if scratch:
            left = subprocess.run(["pgrep", "-f", scratch], capture_output=True, text=True).stdout.split()
            if left or os.path.exists(scratch):
                failures.append("after Ctrl-C: processes %s, %s %s" % (left, scratch,
                                                                        "left" if os.path.exists(scratch) else "gone"))
        else:
            failures.append("no scratch directory in the output")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
    if failures:
        print("FAIL: " + "; ".join(failures) + "\n" + "".join(out)[-3000:], file=sys.stderr)
        return 1
    print("PASS run-on-ibsim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
