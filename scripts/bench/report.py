#!/usr/bin/env python3
"""The benchmarks' statistics and reports: quartiles and per-run ratios
of the runs of bench.py (and of loops.py and waits.py, which bench.py hands
them to as its kit), the text and Markdown tables and the ratio chart (SVG).
Python 3 stdlib only.
"""
from __future__ import annotations

import math
import statistics
from pathlib import Path

def quartiles(xs: list[float]) -> tuple[float, float, float]:
    """(Q1, median, Q3), inclusive method (Q1 = Q3 = x for one sample)."""
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, q2, q3


def summarize(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["status"] == "ok"]
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    s = {"runs": len(runs), "ok": len(ok), "failures": bad}
    if ok and not bad:
        s["status"] = "ok"
    elif not runs:
        s["status"] = "not run"
    else:
        # A single bad run makes the whole configuration FAIL (and says why).
        s["status"] = bad[0] if len(set(bad)) == 1 else "FAIL (" + ", ".join(
            sorted(set(b[6:-1] for b in bad))) + ")"
        if len(bad) < len(runs):
            s["status"] += f" {len(bad)}/{len(runs)}"
    if ok:
        q1, med, q3 = quartiles([r["elapsed_s"] for r in ok])
        s["elapsed_median_s"], s["elapsed_q1_s"], s["elapsed_q3_s"] = med, q1, q3
        s["wall_median_s"] = statistics.median(r["wall_s"] for r in ok)
        s["maxrss_median_mib"] = statistics.median(
            r["maxrss_kib"] for r in ok) / 1024
        s["maxrss_max_mib"] = max(r["maxrss_kib"] for r in ok) / 1024
        s["overhead_median_s"] = statistics.median(
            r["wall_s"] - r["elapsed_s"] * r.get("repeat", 1) for r in ok)
    elif runs:
        s["maxrss_max_mib"] = max(r["maxrss_kib"] for r in runs) / 1024
    return s


def paired_ratio(entry: dict, num: str, den: str) -> dict | None:
    """Time of `num` / time of `den`, run by run.

    Run i of every configuration is taken in round i, one right after the
    other, so background load hits both sides of a per-run ratio alike; the
    median of the per-run ratios (with their quartiles) is the figure. The
    ratio of the two medians is kept beside it. None unless both
    configurations have only good runs.
    """
    sn, sd = entry["summary"].get(num, {}), entry["summary"].get(den, {})
    if sn.get("status") != "ok" or sd.get("status") != "ok":
        return None
    by_round = {r["round"]: r["elapsed_s"] for r in entry["runs"][den]}
    per_run = [r["elapsed_s"] / by_round[r["round"]]
               for r in entry["runs"][num]
               if by_round.get(r["round"], 0) > 0]
    if not per_run or sd["elapsed_median_s"] <= 0:
        return None
    q1, med, q3 = quartiles(per_run)
    return {"median": med, "q1": q1, "q3": q3, "per_run": per_run,
            "of_medians": sn["elapsed_median_s"] / sd["elapsed_median_s"]}


# Short names of the runtimes, by configuration-key suffix.
WHO = {"cxx": "C++", "ours": "ours", "floor": "floor",
       "omp": "libomp", "seq": "sequential"}   # the last two: loops


def why_no_ratio(entry: dict, num: str, den: str) -> str:
    who = [WHO[k.split("/")[1]] for k in (num, den)
           if "FAIL" in entry["summary"].get(k, {}).get("status", "")]
    return "FAIL " + " & ".join(who) if who else "-"


def ratio_cell(entry: dict, num: str, den: str) -> str:
    r = paired_ratio(entry, num, den)
    if r is None:
        return why_no_ratio(entry, num, den)
    return f"{r['median']:.2f} ({r['q1']:.2f}-{r['q3']:.2f})"


# ----------------------------------------------------------------- output

def fmt_s(s: dict, key: str, unit_fmt: str = "{:.4f}") -> str:
    if s.get("status") != "ok":
        return s.get("status", "-")
    return unit_fmt.format(s[key])


# Median and IQR cell: one function for bench.py and its two sibling modules.


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]
    line = lambda r: "  ".join(  # noqa: E731
        str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
        for i, c in enumerate(r))
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def markdown(rows: list[list[str]], header: list[str]) -> str:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])


def rss_cell(s: dict) -> str:
    if "maxrss_median_mib" in s:
        return f"{s['maxrss_median_mib']:.1f}"
    if "maxrss_max_mib" in s:
        return f"({s['maxrss_max_mib']:.1f})"
    return "-"


def svg_chart(path: Path, results: dict, groups: list[tuple[str, str, str]],
              title: str, subtitle: str) -> None:
    """Bar chart of time ratios (reference / ours), log2 scale, 1 in the middle.

    groups: (label, reference config key, ours config key) -> one bar per
    workload per group: the median of per-run ratios, with a whisker from
    Q1 to Q3.  Bars above the line: ours faster than that reference (the
    C++ runtime); the floor's bars sit below it, at 1 / (ours/floor).
    FAIL cells are marked.
    """
    names = list(results)
    ratios = {(n, g[0]): paired_ratio(results[n], g[1], g[2])
              for n in names for g in groups}
    vals = [v for r in ratios.values() if r
            for v in (r["median"], r["q1"], r["q3"]) if v > 0]
    top = max([abs(math.log2(v)) for v in vals] + [1.0])
    top = math.ceil(top + 0.25)          # axis: 2^-top .. 2^top
    colors = ["#3b75af", "#e28a2b", "#519e3e", "#8d69b8"]
    W, H = max(820, 140 + 150 * len(names)), 470
    x0, x1, y0, y1 = 80, W - 20, 80, H - 90   # plot area
    ymid = (y0 + y1) / 2
    scale = (y1 - y0) / 2 / top

    def y_of(r: float) -> float:
        return ymid - math.log2(r) * scale

    esc = lambda t: (t.replace("&", "&amp;").replace("<", "&lt;")  # noqa
                     .replace(">", "&gt;"))
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W/2}" y="24" text-anchor="middle" font-size="16" '
         f'font-weight="bold">{esc(title)}</text>',
         f'<text x="{W/2}" y="42" text-anchor="middle" fill="#555">'
         f'{esc(subtitle)}</text>']
    for k in range(-top, top + 1):
        y = ymid - k * scale
        lab = f"{2.0 ** k:g}" if k >= 0 else f"1/{2 ** -k}"
        o.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" '
                 f'stroke="{"#000" if k == 0 else "#ddd"}" '
                 f'stroke-width="{1.5 if k == 0 else 1}"/>')
        o.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">'
                 f'{lab}</text>')
    o.append(f'<text x="18" y="{ymid}" text-anchor="middle" '
             f'transform="rotate(-90 18 {ymid})">reference time / our time '
             f'(log scale; &gt; 1 = ours faster)</text>')
    slot = (x1 - x0) / max(1, len(names))
    bw = min(48, (slot - 24) / max(1, len(groups)))
    for i, n in enumerate(names):
        cx = x0 + slot * (i + 0.5)
        o.append(f'<text x="{cx:.1f}" y="{y1 + 18}" text-anchor="middle" '
                 f'font-weight="bold">{esc(n)}</text>')
        for j, g in enumerate(groups):
            bx = cx - bw * len(groups) / 2 + j * bw
            r = ratios[(n, g[0])]
            if r is None:
                why = why_no_ratio(results[n], g[1], g[2])
                head, _, who = why.partition(" ")
                o.append(f'<text x="{bx + bw/2:.1f}" y="{ymid - 6}" '
                         f'text-anchor="middle" fill="#c00" '
                         f'font-weight="bold">{"n/a" if why == "-" else head}'
                         f'</text>')
                if who:
                    o.append(f'<text x="{bx + bw/2:.1f}" y="{ymid + 14}" '
                             f'text-anchor="middle" fill="#c00" '
                             f'font-size="10">{esc(who)}</text>')
                continue
            med = r["median"]
            yr = y_of(med)
            ytop, hgt = min(yr, ymid), abs(yr - ymid)
            o.append(f'<rect x="{bx + 2:.1f}" y="{ytop:.1f}" '
                     f'width="{bw - 4:.1f}" height="{max(hgt, 1):.1f}" '
                     f'fill="{colors[j % len(colors)]}"><title>{esc(n)} '
                     f'{esc(g[0])}: {med:.3f} (IQR {r["q1"]:.3f}-'
                     f'{r["q3"]:.3f})</title></rect>')
            xm = bx + bw / 2
            yq1, yq3 = y_of(r["q1"]), y_of(r["q3"])
            o.append(f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{yq1:.1f}" '
                     f'y2="{yq3:.1f}" stroke="#222" stroke-width="1.2"/>')
            for yq in (yq1, yq3):
                o.append(f'<line x1="{xm - 5:.1f}" x2="{xm + 5:.1f}" '
                         f'y1="{yq:.1f}" y2="{yq:.1f}" stroke="#222" '
                         f'stroke-width="1.2"/>')
            ty = min(yr, yq3) - 5 if med >= 1 else max(yr, yq1) + 14
            o.append(f'<text x="{xm:.1f}" y="{ty:.1f}" '
                     f'text-anchor="middle">{med:.2f}×</text>')
    ly = H - 40
    for j, g in enumerate(groups):
        lx = x0 + j * 240
        o.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" '
                 f'fill="{colors[j % len(colors)]}"/>')
        o.append(f'<text x="{lx + 18}" y="{ly}">{esc(g[0])}</text>')
    o.append(f'<text x="{x0}" y="{H - 14}" fill="#555" font-size="11">'
             f'Median of per-run ratios of in-program time (rtclock, JIT '
             f'excluded), whiskers Q1-Q3. FAIL = crash, timeout or wrong '
             f'checksum in some run.</text>')
    o.append("</svg>")
    path.write_text("\n".join(o) + "\n")
