#!/usr/bin/env python3
"""`edgevla bag report --html` on a recorded run of launch/pi05_demo.yaml (tiny generated pi0.5).

  html_report_test.py page     --edgevla BIN --source DIR --work DIR
      the page as written: self-contained, one histogram per stage named in the bag plus the
      end-to-end ones, bar counts that add up to each histogram's n, the chunk timeline, the
      action and state plots; a run recorded without its commands (the page says what lacks
      them); bad inputs (a bag with no latency data, a cut-short bag, a file that is no bag).
  html_report_test.py chromium --edgevla BIN --source DIR --work DIR [--keep-screenshot PNG]
      the page in headless Chromium: the DOM after its script ran has every plot laid out with
      sized marks, and the screenshot has data-coloured pixels inside every plot. Exits 77
      (ctest: skipped) when Chromium is not installed.

The work folder is removed on success; Chromium's profile, cache and temporary files stay in it
(TMPDIR, HOME and --user-data-dir point there), and nothing may be left in /tmp or /dev/shm.
"""
import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def run(cmd, env=None, timeout=300):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, timeout=timeout, capture_output=True, text=True)


def record(args, work):
    """Generates the checkpoint, runs the demo graph with recording on; returns the bag's path."""
    ck = os.path.join(work, "tiny_pi05")
    r = run([args.edgevla, "model", "init", "--config", "tiny", "--model", "pi05", "--seed", "3", "--out", ck])
    if r.returncode != 0:
        fail("model init: " + r.stderr)
    registry = os.path.join(work, "registry")
    os.makedirs(registry, mode=0o700, exist_ok=True)
    env = dict(os.environ, EDGEVLA_CHECKPOINT=ck, EDGEVLA_RUN_DIR=work, EDGEVLA_REGISTRY_DIR=registry,
               EDGEVLA_DOMAIN="report-%d" % os.getpid())
    scale = max(1.0, float(os.environ.get("EDGEVLA_TEST_TIME_SCALE", "1")))
    cmd = [args.edgevla, "launch", os.path.join(args.source, "launch", "pi05_demo.yaml"), "--duration",
           str(4 * scale), "--set", "actuation.execute_steps=5"]
    if scale > 1:
        for s in ("action_head.action_dt_s=%g" % (0.02 * scale), "actuation.watchdog_timeout_s=%g" % (2 * scale),
                  "preprocess.chunk_timeout_s=%g" % (3 * scale)):
            cmd += ["--set", s]
    r = run(cmd, env=env, timeout=int(120 + 60 * scale))
    if r.returncode != 0:
        fail("launch pi05_demo.yaml: " + r.stderr[-4000:])
    bag = os.path.join(work, "pi05_demo.mcap")
    if not os.path.isfile(bag):
        fail("the run wrote no " + bag)
    return bag, env


def report(args, bag, html):
    r = run([args.edgevla, "bag", "report", bag, "--html", html])
    if r.returncode != 0:
        fail("bag report --html: " + r.stderr)
    with open(html, encoding="utf-8") as f:
        return f.read(), r


def svgs(page):
    """(kind, id, body) of every plot's <svg>."""
    return re.findall(r'<svg class="plot (\w+)" id="([\w-]+)"[^>]*>(.*?)</svg>', page, re.S)


def check_page(args, work):
    bag, env = record(args, work)
    page, r = report(args, bag, os.path.join(work, "report.html"))

    # Self-contained: no resource from anywhere else (the SVG namespace is a name, not a fetch).
    for pattern in (r'\bsrc=', r'\bhref=', r'@import', r'url\('):
        if re.search(pattern, page):
            fail("the page loads something from outside (%s)" % pattern)
    if re.findall(r'https?://(?!www\.w3\.org/2000/svg)', page):
        fail("the page names a URL other than the SVG namespace")

    plots = svgs(page)
    hist = [(i, b) for k, i, b in plots if k == "histogram"]
    titles = [re.search(r'<text class="title"[^>]*>(.*?)</text>', b).group(1) for _, b in hist]
    # Stage names come from the bag: the camera's node, the three stage-time fields, end to end.
    want = ["base_camera (capture -&gt; publish)", "preprocess (compute)", "backbone (compute)", "action_head (compute)",
            "camera -&gt; actions published", "camera -&gt; actuation (end to end)", "camera -&gt; first command",
            "framework overhead"]
    for w in want:
        if not any(t.startswith(w) for t in titles):
            fail("no histogram titled %r (titles: %s)" % (w, titles))
    if len(hist) != len(want):
        fail("%d histograms, expected %d" % (len(hist), len(want)))
    # Every histogram's bars hold all of its values: the counts in the bar tooltips add up to n.
    for pid, body in hist:
        n = int(re.search(r'<text class="subtitle"[^>]*>n (\d+),', body).group(1))
        counts = [int(c) for c in re.findall(r'<rect class="mark bar"[^>]*><title>[^<]*: (\d+)</title>', body)]
        if n < 10:
            fail("%s has %d values; a 4 s run gives ~40 chunks" % (pid, n))
        if sum(counts) != n or not counts:
            fail("%s: bars hold %d of %d values" % (pid, sum(counts), n))
        for h in re.findall(r'<rect class="mark bar"[^>]*height="([\d.]+)"', body):
            if float(h) <= 0:
                fail("%s has a bar of height %s" % (pid, h))

    timeline = [b for k, i, b in plots if k == "timeline"]
    if len(timeline) != 1:
        fail("no chunk timeline")
    lanes = re.findall(r'<text class="lane"[^>]*>(.*?)</text>', timeline[0])
    for lane in ("base_camera", "preprocess", "backbone", "action_head", "actuation"):
        if lane not in lanes:
            fail("the timeline has no lane %r (lanes: %s)" % (lane, lanes))
    spans = re.findall(r'<rect class="mark span"[^>]*width="([\d.]+)"', timeline[0])
    if len(spans) < 5:
        fail("the timeline has %d bars" % len(spans))
    # The bars lie in time order along the chunk's path: each compute bar ends where the next
    # stage's begins or before.
    ends = [float(m) for m in re.findall(r': compute, [\d.]+-([\d.]+) ms', timeline[0])]
    if ends != sorted(ends) or len(ends) != 4:
        fail("compute bars out of order along the path: %s" % ends)

    lines = [(i, b) for k, i, b in plots if k == "lines"]
    if len(lines) != 2:
        fail("%d line plots, expected actions and state" % len(lines))
    for pid, body in lines:
        series = re.findall(r'<polyline class="mark series"[^>]*points="([^"]*)"', body)
        if not series:
            fail(pid + " has no series")
        if min(len(p.split()) for p in series) < 50:
            fail(pid + " has a series of fewer than 50 points (50 Hz for 4 s)")
    if "JointCommand position" not in page or "RobotState position" not in page:
        fail("the line plots are not the commands and the robot state")

    # A cut-short bag: a report of what is intact, which says the bag is damaged.
    with open(bag, "rb") as f:
        data = f.read()
    cut = os.path.join(work, "cut.mcap")
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 2 // 5])
    cut_page, r = report(args, cut, os.path.join(work, "cut.html"))
    if "the bag is damaged" not in cut_page or "damaged" not in r.stderr:
        fail("the report of a cut-short bag does not say it is damaged")
    if not svgs(cut_page):
        fail("the report of a cut-short bag plots nothing of its intact part")

    # Not an MCAP file at all: one error naming it.
    junk = os.path.join(work, "junk.mcap")
    with open(junk, "wb") as f:
        f.write(b"not a bag\n" * 10)
    r = run([args.edgevla, "bag", "report", junk, "--html", os.path.join(work, "junk.html")])
    if r.returncode == 0 or "junk.mcap" not in r.stderr or os.path.exists(os.path.join(work, "junk.html")):
        fail("a file that is not a bag: rc %d, stderr %r" % (r.returncode, r.stderr))

    # A run recorded without the commands: the page says which plots lack them and why.
    with open(os.path.join(args.source, "launch", "pi05_demo.yaml")) as f:
        demo = f.read()
    no_commands = re.sub(r"(topics: \[[^\]]*?)/robot/command, ", r"\1", demo)  # the recorded list only
    no_commands = no_commands.replace("pi05_demo.mcap", "no_commands.mcap")
    no_commands = no_commands.replace("../params/", os.path.join(args.source, "params") + "/")
    if no_commands.count("/robot/command") != 1 or "no_commands.mcap" not in no_commands:  # the remap stays
        fail("launch/pi05_demo.yaml changed shape; update this test's copy without /robot/command")
    launch = os.path.join(work, "no_commands.yaml")
    with open(launch, "w") as f:
        f.write(no_commands)
    r = run([args.edgevla, "launch", launch, "--duration", "3", "--set", "actuation.execute_steps=5"], env=env,
            timeout=180)
    if r.returncode != 0:
        fail("launch without /robot/command recorded: " + r.stderr[-2000:])
    page, r = report(args, os.path.join(work, "no_commands.mcap"), os.path.join(work, "no_commands.html"))
    missing = re.findall(r'<div class="missing" id="([\w-]+)"[^>]*><b>(.*?)</b><br>(.*?)</div>', page)
    titles = {t: why for _, t, why in missing}
    for t in ("camera -&gt; actuation (end to end)", "camera -&gt; first command", "actions: JointCommand position"):
        if t not in titles or "/robot/command" not in titles[t]:
            fail("the page without commands does not say %r lacks them (missing panels: %s)" % (t, titles))
    if len([k for k, _, _ in svgs(page) if k == "histogram"]) != 5:  # camera, 3 stages, camera -> actions
        fail("the page without commands lost histograms that need no commands")
    if "the timeline ends at the action head" not in page:
        fail("the page without commands does not say its timeline stops at the action head")

    # A bag with no latency data (a camera alone): one error that says what to record.
    launch = os.path.join(work, "camera_only.yaml")
    with open(launch, "w") as f:
        f.write("record:\n  output: %s\n  topics: [/camera/base/image]\n"
                "nodes:\n  - name: base_camera\n    type: camera\n    remap: {image: /camera/base/image}\n"
                % os.path.join(work, "camera_only.mcap"))
    r = run([args.edgevla, "launch", launch, "--duration", "1"], env=env, timeout=120)
    if r.returncode != 0:
        fail("camera-only launch: " + r.stderr[-2000:])
    out = os.path.join(work, "camera_only.html")
    r = run([args.edgevla, "bag", "report", os.path.join(work, "camera_only.mcap"), "--html", out])
    errors = [l for l in r.stderr.splitlines() if l.startswith("error")]
    if r.returncode == 0 or len(errors) != 1 or "no latency data" not in errors[0] or "/policy/actions" not in errors[0]:
        fail("a bag without latency data: rc %d, stderr %r" % (r.returncode, r.stderr))
    if os.path.exists(out):
        fail("a page was written for a bag without latency data")


def listing():
    return {d: set(os.listdir(d)) for d in ("/tmp", "/dev/shm") if os.path.isdir(d)}


def chromium_binary():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def check_chromium(args, work):
    chromium = chromium_binary()
    if chromium is None:
        print("SKIP: chromium is not installed (scripts/setup installs Debian's chromium)")
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(SKIP)
    try:
        from PIL import Image
    except ImportError:
        fail("python3-pil is missing (scripts/setup installs it)")
    bag, _ = record(args, work)
    html = os.path.join(work, "report.html")
    report(args, bag, html)

    home = os.path.join(work, "chromium-home")
    os.makedirs(home, exist_ok=True)
    # Chromium puts a unix socket in TMPDIR, and socket paths end at 108 bytes: a folder under
    # the build tree can be too deep. A short one in /tmp instead, made before the listing
    # below and removed however the test ends.
    tmp = tempfile.mkdtemp(prefix="evr-")
    atexit.register(shutil.rmtree, tmp, True)
    env = dict(os.environ, TMPDIR=tmp, HOME=home, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home, XDG_RUNTIME_DIR=home)
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--user-data-dir=" + os.path.join(home, "profile"), "--force-device-scale-factor=1", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions"]
    before = listing()

    def browse(extra, height):
        r = run(base + ["--window-size=1120,%d" % height] + extra + ["file://" + html], env=env, timeout=120)
        if r.returncode != 0:
            fail("chromium %s: rc %d\n%s" % (extra, r.returncode, r.stderr[-3000:]))
        return r

    dom = browse(["--dump-dom"], 3000).stdout
    m = re.search(r'<pre id="layout"[^>]*>(.*?)</pre>', dom, re.S)
    if not m or not m.group(1).strip():
        fail("the page's script did not run in Chromium (no layout in the DOM)")
    layout = json.loads(m.group(1).replace("&quot;", '"'))
    plots = layout["plots"]
    kinds = [p["kind"] for p in plots]
    if kinds.count("histogram") != 8 or kinds.count("timeline") != 1 or kinds.count("lines") != 2:
        fail("Chromium laid out %s" % kinds)
    for p in plots:
        if p["width"] <= 0 or p["height"] <= 0:
            fail("%s has no size in Chromium" % p["id"])
        if p["marks"] == 0 or p["sized"] != p["marks"]:
            fail("%s: %d of %d marks have a size in Chromium" % (p["id"], p["sized"], p["marks"]))

    height = int(layout["page_height"]) + 16
    shot = os.path.join(work, "report.png")
    browse(["--screenshot=" + shot], height)
    image = Image.open(shot).convert("RGB")
    if image.size != (1120, height):
        fail("screenshot is %s, expected 1120x%d" % (image.size, height))

    def coloured(x0, y0, x1, y1):
        """Pixels of a saturated colour (data marks; axes and text are grey) in the box."""
        box = image.crop((int(x0), int(y0), int(x1), int(y1))).convert("HSV")
        return sum(1 for h, s, v in box.getdata() if s > 80 and v > 60)

    if coloured(0, 0, image.size[0], image.size[1]) == 0:
        fail("the screenshot is blank")
    for p in plots:
        x, y, w, h = p["x"], p["y"], p["width"], p["height"]
        if p["kind"] == "histogram":
            n, least = coloured(x, y, x + w, y + h), 1000
        elif p["kind"] == "timeline":  # the lanes, above the axis and the legend
            n, least = coloured(x, y + 40, x + w, y + h - 60), 500
        else:  # the data area, left of the legend
            n, least = coloured(x, y + 40, x + w - 90, y + h), 2000
        print("%s: %d data-coloured pixels" % (p["id"], n))
        if n < least:
            fail("%s has %d data-coloured pixels in the screenshot (want >= %d)" % (p["id"], n, least))
    if args.keep_screenshot:
        shutil.copyfile(shot, args.keep_screenshot)

    after = listing()
    left = []
    for d, names in after.items():
        for name in sorted(names - before.get(d, set())):
            if re.search(r"chrom|scoped_dir|crashpad|\.org\.|\.com\.google", name, re.I):
                left.append(os.path.join(d, name))
    if left:
        fail("Chromium left files outside the work folder: %s" % left)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["page", "chromium"])
    p.add_argument("--edgevla", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--keep-screenshot", help="copy the screenshot here")
    args = p.parse_args()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if args.mode == "page":
        check_page(args, work)
    else:
        check_chromium(args, work)
    shutil.rmtree(work, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
