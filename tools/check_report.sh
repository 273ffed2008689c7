#!/bin/sh
# check_report.sh — `make check-report`: a report of real runs, opened in a
# real browser. Installs Debian's chromium when it is missing (as root),
# trains two short Fashion-MNIST runs that differ only in --lr, writes their
# report, and opens it in headless Chromium twice: a screenshot, which must
# not be blank (many colours, a fair share of non-white pixels; decoded here
# with python3's zlib), and the DOM after load (--dump-dom), which must hold
# both run names, the first diverging step that `lockstep verify` names (the
# record's SQL rule, independent of the report's own comparison), two loss
# curves of many points, the divergence marker, and no script.
# Usage: sh tools/check_report.sh [BIN] [SCREENSHOT.png]
#   BIN: the lockstep binary (default build/lockstep)
#   SCREENSHOT.png: where to keep the screenshot (default: $BUILD/check-report/report.png);
#   docs/report.png is the one the README shows.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$root/build/lockstep}
case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
out=$(dirname "$BIN")/check-report
keep=${2:-$out/report.png}
say() { echo "check-report: $*"; }
fail() { echo "check-report: FAIL: $*" >&2; exit 1; }

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "check-report: chromium is missing: run as root (it installs Debian's chromium) or apt-get install chromium" >&2
        exit 2
    fi
    say "installing chromium"
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null
fi
command -v python3 >/dev/null 2>&1 || fail "python3 is missing (Debian package python3)"

rm -rf "$out"
mkdir -p "$out"
cd "$out"   # the page names the database as given: runs.db
db=runs.db
for lr in 0.01 0.02; do
    "$BIN" train --task fashion-mnist --steps 60 --eval-every 20 --threads 2 --lr $lr --name "lr-$lr" \
        --db "$db" --no-progress >/dev/null
done
# The first diverging step as verify (the record's SQL query) names it.
set +e
"$BIN" verify --db "$db" lr-0.01 lr-0.02 >"$out/verify.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "verify of runs with different learning rates exited $rc, not 1"
first=$(sed -n 's/.*differ first at step \([0-9]*\):.*/\1/p' "$out/verify.txt")
[ -n "$first" ] || fail "verify named no first diverging step: $(cat "$out/verify.txt")"
"$BIN" report --db "$db" lr-0.01 lr-0.02 -o "$out/report.html" >/dev/null

# A fresh profile, no network: the page must stand alone.
browse() {
    timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$out/profile" \
        --proxy-server=127.0.0.1:9 "$@" "file://$out/report.html" 2>>"$out/chromium.log"
}
browse --screenshot="$out/shot.png" --window-size=1000,1300 >/dev/null
browse --dump-dom >"$out/dom.html"
[ -s "$out/shot.png" ] || fail "chromium wrote no screenshot (see $out/chromium.log)"

python3 - "$out/shot.png" "$out/dom.html" "$first" <<'PY'
import re, struct, sys, zlib

def decode_png(path):
    """Colour pixels of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    pos, idat = 8, b''
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and interlace == 0, 'unexpected PNG format'
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, rows, i = bytearray(stride), [], 0
    for _ in range(h):
        ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ft == 1: line[x] = (line[x] + a) & 255
            elif ft == 2: line[x] = (line[x] + b) & 255
            elif ft == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows

shot, dom_path, first = sys.argv[1], sys.argv[2], sys.argv[3]
w, h, bpp, rows = decode_png(shot)
colours, nonwhite = set(), 0
for r in rows:
    for x in range(0, len(r), bpp):
        px = r[x:x + 3]
        colours.add(px)
        nonwhite += px != b'\xff\xff\xff'
share = nonwhite / (w * h)
print('check-report: screenshot %dx%d: %d colours, %.1f%% non-white' % (w, h, len(colours), 100 * share))
assert len(colours) >= 50, 'the screenshot has only %d colours: blank?' % len(colours)
assert share >= 0.03, 'the screenshot is %.2f%% non-white: blank?' % (100 * share)

dom = open(dom_path, encoding='utf-8').read()
def need(cond, what):
    if not cond:
        sys.exit('check-report: FAIL: the DOM after load lacks ' + what)
need('lr-0.01' in dom and 'lr-0.02' in dom, 'both run names')
need(re.search(r'differ first at step <span class="first-step">%s</span>' % first, dom), 'the first diverging step %s' % first)
need(re.search(r'<line class="marker c1" data-step="%s"' % first, dom), 'the divergence marker at step %s' % first)
loss = dom[dom.index('training loss'):]
loss = loss[:loss.index('</svg>')]
curves = re.findall(r'<path class="curve (c\d)" data-series="([^"]*)" d="([^"]*)"', loss)
need(len(curves) == 2 and {c[1] for c in curves} == {'lr-0.01', 'lr-0.02'}, 'two loss curves named after the runs')
for c in curves:
    pts = re.findall(r'[ML]([0-9.]+),([0-9.]+)', c[2])
    need(len(pts) >= 60, 'a loss curve of 60 points (%s has %d)' % (c[1], len(pts)))
need(re.search(r'<svg[^>]*class="chart"', dom) and 'test_acc' in dom, 'the evaluation chart')
need('<script' not in dom.lower(), 'no script (it has one)')
# Self-contained: nothing the page could fetch (the SVG namespace is a name, not a fetch).
refs = re.findall(r'(?:src|href)\s*=\s*"(?!#|data:)[^"]*"|url\(|@import', dom)
need(not refs, 'no reference to anything outside the page (it has %s)' % refs[:3])
print('check-report: DOM: both runs, first divergence at step %s, 2 loss curves, evaluation chart' % first)
PY
cp "$out/shot.png" "$keep.tmp" && mv "$keep.tmp" "$keep"
say "passed; screenshot $keep"
