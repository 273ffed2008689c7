"""stats.py — the Python peers' statistics (peer.py, peer_graph.py).

The median and spread go through stats.awk, the program the shell benches
use through lib.sh, so a median means the same thing in every figure the
benches print; TSV rows are printed as lib.sh's bench_row prints them.
"""
import os
import subprocess

AWK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stats.awk")


def _awk(mode, lines, fmt=""):
    out = subprocess.run(["awk", "-v", f"mode={mode}", "-v", f"fmt={fmt}", "-f", AWK],
                         input="".join(line + "\n" for line in lines),
                         check=True, capture_output=True, text=True).stdout
    return out.strip()


def median(values):
    """The median of a list of numbers, as a float."""
    return float(_awk("median", [repr(float(v)) for v in values]))


def spread(values, fmt="%.0f"):
    """'median [min..max]' of a list of numbers, each figure in fmt."""
    return _awk("spread", [repr(float(v)) for v in values], fmt)


def row(*fields):
    """Print one TSV row: the fields joined by tabs."""
    print("\t".join(str(f) for f in fields), flush=True)
