#!/bin/sh
# check_fma.sh — the fused-operation guard of `make check-cross`.
#
# docs/contract.md: a*b+c is two roundings unless the source says fmaf. gcc
# contracts a*b+c into one fused instruction on aarch64 (fmadd, fmla, ...)
# unless -ffp-contract=off, which LS_PINNED in the Makefile carries; a file
# compiled without it, a pragma, or a builtin would change the bits on ARM
# alone, and no x86-64 test could see it. So the aarch64 objects are
# disassembled and every function holding fmadd, fmsub, fnmadd, fnmsub, fmla
# or fmls (scalar, vector or by element) must be on the allow-list: the
# functions whose source calls fma or fmaf explicitly. The list is derived
# from the source, not kept by hand: every function definition (a line at
# column 0 with a name and '(' and no ';') or function-like macro whose body
# has a call fma(...) or fmaf(...) outside a comment, and, because inlining
# moves a callee's fused instruction into its caller, every function that
# names a static function or a macro of the list (to a fixed point; a macro
# named as an argument counts; an extern function is not inlined across
# files without LTO, so its callers stay off; a function made by a generator
# macro, NN_TWIN_FMA(axpy, ...), is axpy with its _vec and _scalar twins). So
# a contraction in a function
# that also calls a static fmaf function is not caught; one anywhere else is.
#
#   sh tools/check_fma.sh [-s SRC_DIR]... BUILD_DIR | OBJECT...
# BUILD_DIR: its obj/ folder is scanned (every .o). SRC_DIR: where the allow-
# list comes from (default: base engine reduce record tools tests). Prints one
# line per offending function and a closing line; exit 1 when any offends.
set -u
cd "$(dirname "$0")/.." || exit 2
OBJDUMP=${OBJDUMP:-aarch64-linux-gnu-objdump}
srcs=""
while [ $# -gt 0 ]; do
    case $1 in
    -s) srcs="$srcs $2"; shift 2 ;;
    *) break ;;
    esac
done
[ -n "$srcs" ] || srcs="base engine reduce record tools tests"
[ $# -gt 0 ] || { echo "usage: check_fma.sh [-s SRC_DIR]... BUILD_DIR | OBJECT..." >&2; exit 2; }
command -v "$OBJDUMP" >/dev/null 2>&1 ||
    { echo "check_fma: no $OBJDUMP (Debian package binutils-aarch64-linux-gnu): run 'make deps-cross'" >&2; exit 2; }

# The allow-list (above). Comment lines and /* */ on a line are
# ignored, and so are string literals (target("avx2,fma") names no call).
allow=$(mktemp)
objs=$(mktemp)
trap 'rm -f "$allow" "$objs"' EXIT
# shellcheck disable=SC2086
find $srcs -name '*.[ch]' 2>/dev/null | sort | xargs awk '
    FNR == 1 { fn = ""; mac = "" }
    # A macro line (and its continuations) belongs to the macro, not to the
    # function around it; a mention of the macro counts as a call.
    /^[ \t]*#[ \t]*define[ \t]+[A-Za-z_0-9]+\(/ {
        mac = $0; sub(/^[ \t]*#[ \t]*define[ \t]+/, "", mac); sub(/\(.*/, "", mac)
        inl[mac] = 1
    }
    # A generator macro at column 0 whose first argument is a name defines
    # that function (engine/nn/nn.h: NN_TWIN_FMA(axpy, ...) makes axpy,
    # axpy_vec and axpy_scalar, all static).
    /^[A-Z][A-Z0-9_]*\([ \t]*[A-Za-z_][A-Za-z_0-9]*[ \t]*,/ && mac == "" {
        fn = $0; sub(/^[A-Z][A-Z0-9_]*\([ \t]*/, "", fn); sub(/[ \t]*,.*/, "", fn)
        inl[fn] = 1
        gen = 1
    }
    /^[A-Za-z_].*[A-Za-z_0-9][ \t]*\(/ && !/;[ \t]*$/ && !/^(typedef|struct|enum|union)/ && mac == "" && !gen {
        s = $0; gsub(/__attribute__[ \t]*\(\([^)]*\)\)/, "", s)
        sub(/\(.*/, "", s); n = split(s, w, /[^A-Za-z_0-9]+/)
        fn = w[n]; if (fn == "") fn = w[n - 1]
        if ($0 ~ /^static/) inl[fn] = 1
    }
    {
        owner = mac != "" ? mac : fn
        cont = $0 ~ /\\[ \t]*$/
        line = $0; gsub(/"([^"\\]|\\.)*"/, "", line); gsub(/\/\*.*\*\//, "", line); sub(/\/\/.*/, "", line)
        if (line !~ /^[ \t]*(\*|\/\*)/ && owner != "") {
            if (mac != "") sub(/^[ \t]*#[ \t]*define[ \t]+[A-Za-z_0-9]+/, "", line)
            while (match(line, /[A-Za-z_][A-Za-z_0-9]*/)) {
                t = substr(line, RSTART, RLENGTH)
                if (t != owner) calls[owner, t] = 1
                line = substr(line, RSTART + RLENGTH)
            }
        }
        if (!cont) mac = ""
        gen = 0
    }
    END {
        ok["fma"] = 1; ok["fmaf"] = 1; inl["fma"] = 1; inl["fmaf"] = 1
        do {
            more = 0
            for (k in calls) {
                split(k, p, SUBSEP)
                if ((p[2] in ok) && (p[2] in inl) && !(p[1] in ok)) { ok[p[1]] = 1; more = 1; }
            }
        } while (more)
        for (f in ok) if (f != "fma" && f != "fmaf") print f
    }' | sort -u >"$allow"

if [ $# -eq 1 ] && [ -d "$1" ]; then
    find "$1/obj" -name '*.o' | sort >"$objs"
else
    for o in "$@"; do echo "$o"; done >"$objs"
fi
[ -s "$objs" ] || { echo "check_fma: no objects in $*" >&2; exit 2; }

bad=0
fused=0
while read -r o; do
    hits=$("$OBJDUMP" -d --no-show-raw-insn "$o" | awk '
        /^[0-9a-f]+ <.*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); sub(/\..*/, "", fn) }
        $2 ~ /^(fmadd|fmsub|fnmadd|fnmsub|fmla|fmls)$/ { c[fn]++ }
        END { for (k in c) print k, c[k] }') || { echo "check_fma: cannot disassemble $o" >&2; exit 2; }
    [ -n "$hits" ] || continue
    while read -r fn count; do
        fused=$((fused + count))
        # A twin made by a generator macro (NAME_vec, NAME_scalar) goes with NAME.
        base=${fn%_vec}
        base=${base%_scalar}
        if grep -qx "$fn" "$allow" || grep -qx "$base" "$allow"; then
            :
        else
            echo "check_fma: $o: $fn has $count fused multiply-add instruction(s) and no fma/fmaf call in its source"
            bad=$((bad + 1))
        fi
    done <<EOF
$hits
EOF
done <"$objs"
n_allow=$(wc -l <"$allow")
if [ "$bad" -ne 0 ]; then
    echo "check_fma: $bad function(s) contracted without an explicit fma (is -ffp-contract=off on every compile?)"
    exit 1
fi
echo "check_fma: $(wc -l <"$objs") objects, $fused fused instructions, all in the $n_allow functions that call fma/fmaf"
