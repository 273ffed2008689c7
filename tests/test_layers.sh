#!/bin/sh
# test_layers.sh — tools/check_layers.sh can fail: each of its rules is shown
# catching a violation planted in a copy of the source folders, and the copy
# without a plant gives the same verdict as the real tree (so the plants, not
# the copying, are what the checker reacts to). The rules planted:
#   - engine/core includes a header of engine/models (a layer above it);
#   - record/ includes a header of reduce/ (side by side, same rank);
#   - a model file holds a string equal to a task's registered name;
#   - a model compares the config's task name (cfg->task);
#   - tools/ includes an engine header outside its tool-only list;
#   - python/ (the Python package's C) includes anything but include/;
#   - two files give SIMD clones to functions of one name (clang's global
#     resolver symbols clash at link time).
# Each planted copy must make the checker exit 1 with a line naming the
# planted file that the unplanted copy does not print. Prints cmocka's
# "[ RUN      ]" / "[       OK ]" / "[  FAILED  ]" lines, which
# tests/run_tests.sh counts. Everything it writes is under one mktemp -d.
set -u

ROOT=${LOCKSTEP_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
CHECK=$ROOT/tools/check_layers.sh
. "$ROOT/tests/cases.sh"

# A fresh copy of the folders check_layers.sh reads, in $T/$1.
copy_tree() {
    rm -rf "${T:?}/$1"
    mkdir -p "$T/$1"
    (cd "$ROOT" && cp -R include base reduce record engine tools "$T/$1/") || return 1
    mkdir -p "$T/$1/python" && (cd "$ROOT" && cp -R python/src "$T/$1/python/") || return 1
}

# The checker on directory $1: its output in $T/$2.out, its status echoed.
run_check() {
    sh "$CHECK" "$1" >"$T/$2.out" 2>&1
    echo $?
}

t_copy_as_real() {
    copy_tree plain || return 1
    real=$(run_check "$ROOT" real)
    copy=$(run_check "$T/plain" plain)
    if [ "$real" != "$copy" ] || ! cmp -s "$T/real.out" "$T/plain.out"; then
        say "the unplanted copy gives exit $copy, the real tree exit $real; their outputs:"
        diff "$T/real.out" "$T/plain.out" >&2
        return 1
    fi
}

# planted NAME FILE: the checker on copy NAME exits 1 and prints a line for
# FILE that the unplanted copy does not.
planted() {
    rc=$(run_check "$T/$1" "$1")
    [ -s "$T/plain.out" ] || { copy_tree plain && run_check "$T/plain" plain >/dev/null; }
    new=$(grep -F -x -v -f "$T/plain.out" "$T/$1.out" | grep -F "$2")
    if [ "$rc" -ne 1 ] || [ -z "$new" ]; then
        say "planted in $2: exit $rc (want 1), and no new line naming $2; output:"
        cat "$T/$1.out" >&2
        return 1
    fi
    say "caught: $new"
}

t_core_includes_model() {
    copy_tree up || return 1
    f=engine/core/config.c
    h=$(cd "$T/up" && find engine/models -name '*.h' | LC_ALL=C sort | head -n 1)
    [ -f "$T/up/$f" ] && [ -n "$h" ] || { say "no $f or no model header to plant"; return 1; }
    printf '#include "%s"\n' "$h" >>"$T/up/$f"
    planted up "$f"
}

t_record_includes_reduce() {
    copy_tree side || return 1
    f=$(cd "$T/side" && find record -name '*.c' | LC_ALL=C sort | head -n 1)
    h=$(cd "$T/side" && find reduce -name '*.h' | LC_ALL=C sort | head -n 1)
    [ -n "$f" ] && [ -n "$h" ] || { say "no record/ source or reduce/ header to plant"; return 1; }
    printf '#include "%s"\n' "$h" >>"$T/side/$f"
    planted side "$f"
}

t_model_names_task() {
    copy_tree name || return 1
    task=$(sed -n 's/^[[:space:]]*\.name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$T/name/engine/tasks/teacher.c" |
        head -n 1)
    [ -n "$task" ] || { say "engine/tasks/teacher.c registers no .name"; return 1; }
    f=engine/models/mlp/mlp.c
    [ -f "$T/name/$f" ] || { say "no $f to plant in"; return 1; }
    printf 'static const char *const planted_task = "%s";\n' "$task" >>"$T/name/$f"
    planted name "$f"
}

t_model_compares_task() {
    copy_tree cmp || return 1
    f=engine/models/mlp/mlp.c
    [ -f "$T/cmp/$f" ] || { say "no $f to plant in"; return 1; }
    printf 'static int planted_is(const ls_config *cfg, const char *t) { return strcmp(cfg->task, t) == 0; }\n' \
        >>"$T/cmp/$f"
    planted cmp "$f"
}

t_tools_internal_header() {
    copy_tree tool || return 1
    f=tools/cmd_golden.c
    [ -f "$T/tool/$f" ] || { say "no $f to plant in"; return 1; }
    printf '#include "engine/core/optim.h"\n' >>"$T/tool/$f"
    planted tool "$f"
}

t_python_internal_header() {
    copy_tree py || return 1
    f=python/src/_lockstep.c
    [ -f "$T/py/$f" ] || { say "no $f to plant in"; return 1; }
    printf '#include "engine/data/npy.h"\n' >>"$T/py/$f"
    planted py "$f"
}

t_clone_name_twice() {
    copy_tree clones || return 1
    f=engine/models/linear/model_linear.c
    [ -f "$T/clones/$f" ] || { say "no $f to plant in"; return 1; }
    name=$(sed -n '/^LS_SIMD_CLONES$/{n;s/^static [a-z]* \([a-z_0-9]*\)(.*/\1/p;q}' "$T/clones/engine/models/mlp/mlp.c")
    [ -n "$name" ] || { say "engine/models/mlp/mlp.c has no cloned function to copy the name of"; return 1; }
    printf 'LS_SIMD_CLONES\nstatic void %s(float *restrict x, size_t n)\n{\n    (void)x, (void)n;\n}\n' "$name" \
        >>"$T/clones/$f"
    planted clones "$f"
}

check layers_copy_as_real_tree t_copy_as_real
check layers_core_includes_model t_core_includes_model
check layers_record_includes_reduce t_record_includes_reduce
check layers_model_names_task t_model_names_task
check layers_model_compares_task t_model_compares_task
check layers_tools_internal_header t_tools_internal_header
check layers_python_internal_header t_python_internal_header
check layers_clone_name_twice t_clone_name_twice
exit $failed
