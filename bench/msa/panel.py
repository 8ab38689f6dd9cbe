#!/usr/bin/env python3
"""The alignment fit's defaults study: real families of many depths, plmc beside attnmech in one run.

Families (nobody here tuned on them; each one's file is made by --prep from Debian packages):
  plmc's examples DHFR (protein, 3616 rows) and RF00162 (RNA, 4757 rows); DHFR's first 300 and 1000 rows;
  Pfam seed alignments in hmmer-examples and hmmer2-doc (fn3, RRM_1, rrm, Pkinase, pkinase, Orn_DAP_Arg_deC, SecY);
  the Dfam seed MADE1 (DNA); globins630 (hmmer2-doc's 630 globins aligned by hmmalign to an HMM of globins4.sto).
Pfam seeds keep hmmbuild's match columns (at most half of the rows a gap), the Dfam seed and the hmmalign output
their #=GC RF columns; each is written as aligned FASTA, the same file for both tools.

The panel was split in two halves before any fit was run (the `half` column): the defaults are chosen on `choose`
only; `report` is run once, at the end, to check the rule. Families of one Pfam entry (fn3 in both tutorials; RRM_1
and rrm; Pkinase and pkinase) sit in one half.

For each family and each row (plmc; meanfield; the alignment fit with model=factored, model=potts and its default):
CPU seconds of the child (user + system, both cores), and the overlap of the top-L, L/2, L/5 pairs (|i - j| >= 6)
with plmc's ranking. Usage:

    python3 bench/msa/panel.py --prep PANEL_DIR                  # apt-get download + hmmalign (root; once)
    python3 bench/msa/panel.py --panel PANEL_DIR --plmc PLMC_DIR --attnmech build/tools/attnmech \
        [--half choose|report|both] [--rows plmc,meanfield,factored,potts,default] [--out bench-panel-out]

Prints one line per run as it ends and the table (markdown) at the end; writes OUT/panel.tsv.

--smoke --out DIR (tests/scripts): the Stockholm -> FASTA step on the test suite's fixture tests/data/msa/rf.sto and
attnmech's rows (default, meanfield) on the result, every pair in couplings.txt (no plmc): seconds.
"""
import argparse
import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import overlaps, read_couplings, sites, timed  # noqa: E402

PROTEIN_PLMC = ["-le", "16.0", "-lh", "0.01", "-m", "100", "-g"]
# name: (half, file in the panel folder or plmc's folder, plmc's flags, attnmech's task settings, fit settings)
FAMILIES = {
    "DHFR": ("choose", "plmc:example/protein/DHFR.a2m", PROTEIN_PLMC + ["-f", "DYR_ECOLI"],
             ["--set", "focus=DYR_ECOLI"], []),
    "DHFR_1000": ("choose", "DHFR_1000.a2m", PROTEIN_PLMC + ["-f", "DYR_ECOLI"], ["--set", "focus=DYR_ECOLI"], []),
    "DHFR_300": ("choose", "DHFR_300.a2m", PROTEIN_PLMC + ["-f", "DYR_ECOLI"], ["--set", "focus=DYR_ECOLI"], []),
    "fn3_h3": ("choose", "fn3_h3.fasta", PROTEIN_PLMC, [], []),
    "fn3_h2": ("choose", "fn3_h2.fasta", PROTEIN_PLMC, [], []),
    "Pkinase_h3": ("choose", "Pkinase_h3.fasta", PROTEIN_PLMC, [], []),
    "pkinase_h2": ("choose", "pkinase_h2.fasta", PROTEIN_PLMC, [], []),
    "SecY": ("choose", "SecY.fasta", PROTEIN_PLMC, [], []),
    "MADE1": ("choose", "MADE1.fasta", ["-a", "-ACGT", "-le", "20.0", "-lh", "0.01", "-m", "50"],
              ["--set", "alphabet=dna"], ["--set", "gaps=state", "--set", "lambda_e=20"]),
    "RF00162": ("report", "plmc:example/RNA/RF00162.fasta", ["-a", ".ACGU", "-le", "20.0", "-lh", "0.01", "-m", "50"],
                ["--set", "alphabet=rna"], ["--set", "gaps=state", "--set", "lambda_e=20"]),
    "RRM_1": ("report", "RRM_1.fasta", PROTEIN_PLMC, [], []),
    "rrm_h2": ("report", "rrm_h2.fasta", PROTEIN_PLMC, [], []),
    "Orn_DAP": ("report", "Orn_DAP.fasta", PROTEIN_PLMC, [], []),
    "globins630": ("report", "globins630.fasta", PROTEIN_PLMC, [], []),
}
ROWS = {"meanfield": ["--estimator", "meanfield"], "factored": ["--set", "model=factored"],
        "potts": ["--set", "model=potts"], "potts_all": ["--set", "model=potts", "--set", "test_fraction=0"],
        "default": []}

# --prep: which Stockholm file of which Debian package, and which alignment in it
DOC = "usr/share/doc/"
SEEDS = {
    "fn3_h3": ("hmmer-examples", DOC + "hmmer/examples/tutorial/fn3.sto", 0),
    "fn3_h2": ("hmmer2-doc", DOC + "hmmer2/tutorial/fn3.sto.gz", 0),
    "RRM_1": ("hmmer-examples", DOC + "hmmer/examples/testsuite/RRM_1.sto.gz", 0),
    "rrm_h2": ("hmmer2-doc", DOC + "hmmer2/tutorial/rrm.sto.gz", 0),
    "Pkinase_h3": ("hmmer-examples", DOC + "hmmer/examples/tutorial/Pkinase.sto", 0),
    "pkinase_h2": ("hmmer2-doc", DOC + "hmmer2/tutorial/pkinase.sto.gz", 0),
    "MADE1": ("hmmer-examples", DOC + "hmmer/examples/tutorial/MADE1.sto", 0),
    "Orn_DAP": ("hmmer-examples", DOC + "hmmer/examples/easel/demotic/examples/example.sto.gz", 0),
    "SecY": ("hmmer-examples", DOC + "hmmer/examples/easel/demotic/examples/example-single.sto.gz", 0),
}


def read_stockholm(path, which):
    """(names in order, name -> aligned row, #=GC RF) of the which-th alignment of a Stockholm file."""
    opener = gzip.open if path.endswith(".gz") else open
    blocks, rows, order, rf = [], {}, [], ""
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            if line.startswith("//"):
                blocks.append((order, rows, rf))
                rows, order, rf = {}, [], ""
            elif line.startswith("#=GC RF"):
                rf += line.split()[2]
            elif line.strip() and not line.startswith("#"):
                name, text = line.split()[:2]
                if name not in rows:
                    order.append(name)
                    rows[name] = ""
                rows[name] += text
    return blocks[which]


def write_fasta(path, order, rows, rf):
    """The RF match columns, or hmmbuild's rule (at most half of the rows a gap) without RF; '.' -> '-'."""
    gap = set(".-~")
    width = len(rows[order[0]])
    if rf:
        cols = [i for i, c in enumerate(rf) if c not in gap]
    else:
        cols = [i for i in range(width) if sum(rows[n][i] in gap for n in order) <= 0.5 * len(order)]
    with open(path, "w") as f:
        for n in order:
            f.write(f">{n}\n{''.join(rows[n][i] for i in cols).replace('.', '-').upper()}\n")
    return len(order), len(cols)


def prep(folder, plmc):
    os.makedirs(folder, exist_ok=True)
    work = tempfile.mkdtemp()
    subprocess.check_call(["apt-get", "download", "hmmer-examples", "hmmer2-doc"], cwd=work)
    for deb in glob.glob(os.path.join(work, "*.deb")):
        subprocess.check_call(["dpkg-deb", "-x", deb, os.path.join(work, "x")])
    for name, (_, rel, which) in SEEDS.items():
        order, rows, rf = read_stockholm(os.path.join(work, "x", rel), which)
        print(name, *write_fasta(os.path.join(folder, name + ".fasta"), order, rows, rf), flush=True)
    if shutil.which("hmmalign"):
        hmm, fa, sto = (os.path.join(work, n) for n in ("globins4.hmm", "globins630.fa", "globins630.sto"))
        seed = os.path.join(work, "x", DOC, "hmmer/examples/tutorial/globins4.sto")
        subprocess.check_call(["hmmbuild", "--amino", hmm, seed], stdout=subprocess.DEVNULL)
        with gzip.open(os.path.join(work, "x", DOC, "hmmer2/tutorial/globins630.fa.gz"), "rt") as f:
            open(fa, "w").write(f.read().upper())
        with open(sto, "w") as out:
            subprocess.check_call(["hmmalign", "--amino", hmm, fa], stdout=out)
        order, rows, rf = read_stockholm(sto, 0)
        print("globins630", *write_fasta(os.path.join(folder, "globins630.fasta"), order, rows, rf), flush=True)
    else:
        print("hmmalign not found (apt-get install hmmer): globins630 left out", flush=True)
    if plmc:  # DHFR's first rows: the same family at smaller depths (the focus is the first record)
        lines = open(os.path.join(plmc, "example/protein/DHFR.a2m")).read().split(">")[1:]
        for n in (300, 1000):
            with open(os.path.join(folder, f"DHFR_{n}.a2m"), "w") as f:
                f.write("".join(">" + rec for rec in lines[:n]))
            print(f"DHFR_{n}", n, flush=True)
    shutil.rmtree(work)


def run(args):
    rows = args.rows.split(",")
    os.makedirs(args.out, exist_ok=True)
    table = []
    for name, (half, rel, plmc_flags, task, fit) in FAMILIES.items():
        if args.half != "both" and half != args.half:
            continue
        if args.family and name not in args.family.split(","):
            continue
        ali = os.path.join(args.plmc, rel[5:]) if rel.startswith("plmc:") else os.path.join(args.panel, rel)
        if not os.path.exists(ali):
            print(f"{name}: {ali} missing (run --prep); skipped", flush=True)
            continue
        out = os.path.join(args.out, name)
        os.makedirs(out, exist_ok=True)
        ref = os.path.join(out, "plmc.couplings")
        cpu_plmc, _ = timed([os.path.join(args.plmc, "bin", "plmc"), "-c", ref] + plmc_flags + [ali],
                            os.path.join(out, "plmc.log"))
        ref_pairs = read_couplings(ref)
        L = sites(ref_pairs)
        log = open(os.path.join(out, "plmc.log")).read()
        neff = next((ln.split()[4] for ln in log.splitlines() if ln.startswith("Effective number")), "?")
        m = next((ln.split()[0] for ln in log.splitlines() if "valid sequences" in ln), "?")
        print(f"{name} ({half}): L = {L}, M = {m}, Neff = {neff}; plmc CPU {cpu_plmc:.1f} s", flush=True)
        for row in rows:
            if row == "plmc":
                continue
            d = os.path.join(out, row)
            settings = task if row == "meanfield" else task + fit
            cmd = [args.attnmech, "run", "msa", "--set", "file=" + ali] + settings + ROWS[row] + ["--out", d,
                                                                                                  "--quiet"]
            cpu, _ = timed(cmd, d + ".log")
            ov = overlaps(read_couplings(os.path.join(d, "couplings.txt")), ref_pairs, L)
            table.append((name, half, L, m, neff, cpu_plmc, row, cpu, ov["L"], ov["L/2"], ov["L/5"]))
            print(f"  {row:>9}: CPU {cpu:7.1f} s ({cpu / cpu_plmc:5.2f} of plmc)  top-L {ov['L']:.3f}  "
                  f"L/2 {ov['L/2']:.3f}  L/5 {ov['L/5']:.3f}", flush=True)
    with open(os.path.join(args.out, "panel.tsv"), "w") as f:
        f.write("family\thalf\tL\tM\tNeff\tplmc_cpu\trow\tcpu\ttopL\ttopL2\ttopL5\n")
        for r in table:
            f.write("\t".join(str(x) for x in r) + "\n")
    print("\n| family | half | L | M | Neff | plmc CPU s | run | CPU / plmc | top-L | top-L/2 | top-L/5 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, half, L, m, neff, cp, row, cpu, a, b, c) in table:
        print(f"| {name} | {half} | {L} | {m} | {neff} | {cp:.1f} | {row} | {cpu / cp:.2f} | {a:.3f} | {b:.3f} | "
              f"{c:.3f} |")


def smoke(args):
    """The --prep conversion and attnmech's rows on a fixture of the test suite, without plmc."""
    os.makedirs(args.out, exist_ok=True)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    order, rows, rf = read_stockholm(os.path.join(repo, "tests", "data", "msa", "rf.sto"), 0)
    fasta = os.path.join(args.out, "rf.fasta")
    m, L = write_fasta(fasta, order, rows, rf)
    print(f"smoke: rf.sto -> {m} rows of {L} match columns", flush=True)
    for row in ("default", "meanfield"):
        d = os.path.join(args.out, row)
        cpu, _ = timed([args.attnmech, "run", "msa", "--set", "file=" + fasta] + ROWS[row] + ["--out", d, "--quiet"],
                       d + ".log")
        pairs = read_couplings(os.path.join(d, "couplings.txt"))
        if len(pairs) != L * (L - 1) // 2:
            sys.exit(f"panel.py --smoke: {row}: {len(pairs)} pairs in couplings.txt, expected {L * (L - 1) // 2}")
        print(f"  {row:>9}: CPU {cpu:.2f} s, {len(pairs)} pairs over {sites(pairs)} sites", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prep", metavar="PANEL_DIR", help="make the panel's files in PANEL_DIR and stop")
    ap.add_argument("--panel", metavar="PANEL_DIR", help="the folder --prep made")
    ap.add_argument("--plmc", default=os.environ.get("PLMC_DIR"), help="plmc's folder (make all); default $PLMC_DIR")
    ap.add_argument("--attnmech", default="build/tools/attnmech")
    ap.add_argument("--half", default="choose", choices=["choose", "report", "both"])
    ap.add_argument("--family", default="", help="comma-separated family names (default: every one of the half)")
    ap.add_argument("--rows", default="meanfield,factored,potts,default")
    ap.add_argument("--row", action="append", default=[], metavar="NAME:k=v,k=v",
                    help="a further row: the alignment fit with these --set keys (e.g. tight:model=potts,rtol=5e-3); "
                    "name it in --rows too")
    ap.add_argument("--out", default="bench-panel-out")
    ap.add_argument("--smoke", action="store_true", help="the conversion and attnmech's rows on a test fixture, no plmc")
    args = ap.parse_args()
    for spec in args.row:
        name, _, kv = spec.partition(":")
        ROWS[name] = [x for pair in kv.split(",") if pair for x in ("--set", pair)]
    if args.smoke:
        return smoke(args)
    if args.prep:
        prep(args.prep, args.plmc)
        return 0
    if not args.plmc or not os.path.exists(os.path.join(args.plmc, "bin", "plmc")):
        print("panel.py: no plmc (--plmc PLMC_DIR, a clone of debbiemarkslab/plmc built with make all); skipped")
        return 0
    if not args.panel:
        print("panel.py: --panel PANEL_DIR is required (make it with --prep)")
        return 2
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
