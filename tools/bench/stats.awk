# stats.awk — the arithmetic of every bench script: the median and spread of
# a list, ratios and differences. The shell benches reach it through lib.sh,
# the Python peers through stats.py, so a median means the same thing in every
# figure they print (and the same as `lockstep bench`'s: the middle figure, or
# the mean of the two middle ones for an even count).
#
#   awk -v mode=MODE [-v fmt=FMT] -f stats.awk
#
# Lists (one figure a line, "VALUE" or "KEY VALUE"; a key is one word, and
# each key is a list of its own, printed in the order first seen):
#   mode=tsv     KEY<TAB>MEDIAN<TAB>MIN<TAB>MAX<TAB>N        (the default)
#   mode=spread  MEDIAN [MIN..MAX], each figure in fmt (default %.2f)
#   mode=median  MEDIAN in fmt (default %.10g)
#   mode=rel     (MAX - MIN) / MEDIAN as a percentage, "37%"
# With -v key=K only the list of key K is read; with -v scale=S the figures
# printed by spread and median are multiplied by S (100 for a percentage).
# Pairs (each line "A B"):
#   mode=ratio   A / B in fmt (default %.10g); "-" when B is 0
#   mode=diff    B - A in fmt (default %.10g): an end time minus a start time
#   mode=le      prints nothing; exits 0 if A <= B on every line, else 1
# Rows (each line any count of figures):
#   mode=sum     their sum in fmt (default %.10g)
#
# A figure that is not a number fails (status 2, a message on stderr): a run
# that printed nothing must not pass as 0. An empty list prints "-".

function isnum(s) {
    return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/
}

function bad(s) {
    printf "stats.awk: line %d: \"%s\" is not a number\n", NR, s > "/dev/stderr"
    failed = 1
    exit 2
}

BEGIN {
    if (mode == "") mode = "tsv"
    if (mode !~ /^(tsv|spread|median|rel|ratio|diff|le|sum)$/) {
        print "stats.awk: unknown mode " mode > "/dev/stderr"
        failed = 1
        exit 2
    }
    if (fmt == "") fmt = mode == "spread" ? "%.2f" : "%.10g"
    if (scale == "") scale = 1
    pairs = mode == "ratio" || mode == "diff" || mode == "le" || mode == "sum"
}

NF == 0 { next }

mode == "sum" {
    t = 0
    for (i = 1; i <= NF; i++) { if (!isnum($i)) bad($0); t += $i }
    printf fmt "\n", t
    next
}

pairs {
    if (NF != 2 || !isnum($1) || !isnum($2)) bad($0)
    if (mode == "diff") printf fmt "\n", $2 - $1
    else if (mode == "le") { if ($1 + 0 > $2 + 0) over = 1 }
    else if ($2 + 0 == 0) print "-"
    else printf fmt "\n", $1 / $2
    next
}

{
    if (NF > 2 || !isnum($NF)) bad($0)
    kk = NF == 2 ? $1 : ""
    if (key != "" && kk != key) next
    if (!(kk in n)) order[++keys] = kk
    v[kk, ++n[kk]] = $NF + 0
}

END {
    if (failed || pairs) exit failed ? 2 : over ? 1 : 0
    if (keys == 0) { print "-"; exit 0 }
    for (k = 1; k <= keys; k++) {
        kk = order[k]
        m = n[kk]
        # insertion sort: the lists are a few repetitions long
        for (i = 1; i <= m; i++) s[i] = v[kk, i]
        for (i = 2; i <= m; i++) {
            x = s[i]
            for (j = i - 1; j >= 1 && s[j] > x; j--) s[j + 1] = s[j]
            s[j + 1] = x
        }
        med = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
        if (mode == "tsv") printf "%s\t%.10g\t%.10g\t%.10g\t%d\n", kk, med, s[1], s[m], m
        else if (mode == "spread") printf fmt " [" fmt ".." fmt "]\n", scale * med, scale * s[1], scale * s[m]
        else if (mode == "median") printf fmt "\n", scale * med
        else printf "%.0f%%\n", med != 0 ? 100 * (s[m] - s[1]) / med : 0
    }
}
