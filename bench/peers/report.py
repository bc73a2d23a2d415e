#!/usr/bin/env python3
"""Turns the JSON results of run.sh into markdown tables.

Input layout (written by run.sh):
  RESULTS/machine.json                      lscpu model, versions, date
  RESULTS/probe-start.json, probe-end.json  build/bench/machine_probe before and after the runs
                                            (FMA peak, triad bandwidth), when it was built
  RESULTS/<model>/<engine>.round<K>.json    peer_bench.py output, one per process
  RESULTS/<model>/<engine>.npz              outputs of the last round (agreement)
  RESULTS/<model>/shapeshift.round<K>.json  shapeshift_bench.py output, one per round, when the
                                            CLI can run models (same schema)

Figures are absolute, with ratios shapeshift / peer (below 1 means shapeshift
is faster or smaller). Where there is no shapeshift result the column says so;
a number is never made up. Several rounds of one engine are combined by the
median of each figure (run.sh interleaves rounds to spread machine noise).

With the probe's figures, each latency is also put against the machine: the
request's floor (peer_costs.py: its FLOPs at the FMA peak or its bytes at the
triad bandwidth, whichever is longer; the higher of the two probes' figures)
over the engine's median, the fraction of the machine it used.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

import numpy as np

import peer_costs
import peer_inputs as pi

PEERS = ("ort", "torch-eager", "torch-compile-dynamic", "torch-compile-default")
SHAPESHIFT = "shapeshift"
NOT_RUNNABLE = "shapeshift: not yet runnable"


def load_rounds(model_dir: pathlib.Path, engine: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(model_dir.glob(f"{engine}.round*.json"))]


def median_of(rounds: list[dict], getter) -> float | None:
    values = []
    for r in rounds:
        try:
            value = getter(r)
        except (KeyError, IndexError, TypeError, StopIteration):  # figure not measured
            continue
        if value is not None:
            values.append(value)
    return statistics.median(values) if values else None


def fmt(value, digits=3) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:.0f}"


def ratio(ours, theirs) -> str:
    if ours is None or theirs in (None, 0):
        return "—"
    return f"{ours / theirs:.2f}×"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def probe_lines(probes: dict[str, dict]) -> list[str]:
    """One line per probe for the report's header."""
    if not probes:
        return ["- machine probe: not run (build/bench/machine_probe was not built): no floors"]
    return [f"- probe-{name}: FMA peak {p['fma_peak_gflops']:.1f} GFLOP/s, triad {p['triad_gbytes_s']:.1f} GB/s "
            f"({p['threads']} threads)" for name, p in probes.items()]


class ModelResults:
    def __init__(self, model_dir: pathlib.Path, limits: peer_costs.Limits | None = None):
        self.name = model_dir.name
        self.limits = limits
        self.dir = model_dir
        self.rounds = {e: load_rounds(model_dir, e) for e in PEERS}
        self.engines = [e for e in PEERS if self.rounds[e]]
        # One result per round (run.sh interleaves shapeshift with the peers);
        # shapeshift.json is a single run from before that. A failed round is
        # named and left out; its figures are never guessed.
        runs = load_rounds(model_dir, SHAPESHIFT)
        single = model_dir / "shapeshift.json"
        if not runs and single.exists():
            runs = [json.loads(single.read_text())]
        failed = [r for r in runs if r.get("error")]
        self.shapeshift = [r for r in runs if not r.get("error")] or None
        self.shapeshift_note = NOT_RUNNABLE
        if failed:
            self.shapeshift_note = f"shapeshift: failed ({failed[0]['error']})"

    def figure(self, engine: str, getter):
        if engine == SHAPESHIFT:
            return median_of(self.shapeshift, getter) if self.shapeshift else None
        return median_of(self.rounds[engine], getter)

    def ratio_cells(self, getter) -> list[str]:
        ours = self.figure(SHAPESHIFT, getter)
        if self.shapeshift is None:
            return ["—"] * len(self.engines)
        return [ratio(ours, self.figure(e, getter)) for e in self.engines]

    def shapeshift_cell(self, getter, digits=3) -> str:
        return fmt(self.figure(SHAPESHIFT, getter), digits) if self.shapeshift else self.shapeshift_note

    def section(self) -> list[str]:
        lines = [f"## {self.name}", ""]
        if not self.engines:
            return lines + ["no peer results", ""]
        counts = [f"{e} {len(self.rounds[e])}" for e in self.engines]
        if self.shapeshift:
            counts.append(f"{SHAPESHIFT} {len(self.shapeshift)}")
        if self.shapeshift_note != NOT_RUNNABLE:
            counts.append(self.shapeshift_note)
        lines.append("rounds per engine: " + ", ".join(counts))
        if self.rounds["ort"]:
            lines.append(f"ORT model file: `{self.rounds['ort'][0]['model_file']}`")
        lines.append("")
        lines += self.latency_table() + self.limits_table() + self.trace_table() + self.cold_table()
        lines += self.memory_table() + self.agreement_table()
        return lines

    def latency_table(self) -> list[str]:
        shapes = sorted({(row["batch"], row["length"])
                         for e in self.engines for r in self.rounds[e] for row in r["latency"]})
        if not shapes:
            return []
        header = ["batch", "length"] + [f"{e} median ms (p99)" for e in self.engines]
        header += ["shapeshift median ms (p99)"] + [f"shapeshift / {e}" for e in self.engines]
        rows = []
        for batch, length in shapes:
            def pick(key):
                return lambda r: next(row[key] for row in r["latency"]
                                      if row["batch"] == batch and row["length"] == length)
            cells = [f"{fmt(self.figure(e, pick('median_ms')))} ({fmt(self.figure(e, pick('p99_ms')))})"
                     for e in self.engines]
            if self.shapeshift:
                ss = (f"{fmt(self.figure(SHAPESHIFT, pick('median_ms')))} "
                      f"({fmt(self.figure(SHAPESHIFT, pick('p99_ms')))})")
            else:
                ss = self.shapeshift_note
            rows.append([str(batch), str(length)] + cells + [ss] + self.ratio_cells(pick("median_ms")))
        return ["### Latency (warm; median over repeats, median over rounds)", ""] + table(header, rows)

    def limits_table(self) -> list[str]:
        """Each cell's floor (peer_costs.py) and the fraction of it each
        engine reached: floor / median latency (1.0: at the machine's limit)."""
        spec = pi.ALL_MODELS.get(self.name)
        runs = [r for e in self.engines for r in self.rounds[e]]
        if self.limits is None or spec is None or not runs:
            return []
        size = pi.sizes(spec.family, bool(runs[0].get("tiny")))
        shapes = sorted({(row["batch"], row["length"]) for r in runs for row in r["latency"]})
        engines = list(self.engines) + ([SHAPESHIFT] if self.shapeshift else [])
        limits = self.limits
        rows = []
        for batch, length in shapes:
            cost = peer_costs.request_cost(spec, size, batch, length)
            if cost is None:
                return []
            floor_ms = 1e3 * cost.floor_s(limits)

            def median(r, b=batch, n=length):
                return next(row["median_ms"] for row in r["latency"] if row["batch"] == b and row["length"] == n)

            fractions = [self.figure(e, median) for e in engines]
            rows.append([str(batch), str(length), f"{cost.flops * 1e-9:.3g}", f"{cost.bytes * 1e-6:.4g}",
                         f"{floor_ms:.3g} ({cost.bound(limits)})"]
                        + [f"{floor_ms / ms:.2f}" if ms else "—" for ms in fractions])
        header = ["batch", "length", "GFLOP", "MB", "floor ms (bound)"] + [f"{e} of floor" for e in engines]
        title = (f"### Against the machine (floor: FLOPs at {limits.fma_peak_gflops:.0f} GFLOP/s or bytes at "
                 f"{limits.triad_gbytes_s:.1f} GB/s, "
                 "the longer; engine's figure: floor / median latency)")
        return [title, ""] + table(header, rows)

    def trace_table(self) -> list[str]:
        metrics = [
            ("requests", lambda r: r["trace"]["requests"], 0),
            ("total engine time s (loading the model, session creation and every run)", lambda r: r["trace"]["engine_s"], 4),
            ("of it, the runs s", lambda r: r["trace"]["requests_s"], 4),
            ("time to first result s", lambda r: r["trace"]["time_to_first_result_s"], 4),
            ("per-request median ms", lambda r: r["trace"]["per_request"]["median_ms"], 3),
            ("per-request p99 ms", lambda r: r["trace"]["per_request"]["p99_ms"], 3),
            ("per-request max ms", lambda r: r["trace"]["per_request"]["max_ms"], 3),
            ("compiles", lambda r: r["trace"]["compile"]["compiles"], 0),
            ("recompiles", lambda r: r["trace"]["compile"]["recompiles"], 0),
            ("recompile-limit hits (fell back to eager)",
             lambda r: r["trace"]["compile"]["recompile_limit_hits"], 0),
            ("compile time s", lambda r: r["trace"]["compile"]["compile_seconds"], 4),
        ]
        return self.metric_table("Variable-length trace (batch 1, cold engine)", metrics)

    def cold_table(self) -> list[str]:
        metrics = [
            ("prepare s (session / compile wrapper)", lambda r: r["cold"]["prepare_s"], 4),
            ("first run s", lambda r: r["cold"]["first_run_s"], 4),
            ("first result s", lambda r: r["cold"]["first_result_s"], 4),
        ]
        return self.metric_table("Cold start", metrics)

    def memory_table(self) -> list[str]:
        metrics = [
            ("peak RSS MB", lambda r: r["memory"]["peak_rss_mb"], 4),
            ("RSS after imports MB", lambda r: r["memory"]["rss_after_imports_mb"], 4),
        ]
        return self.metric_table("Memory (whole process)", metrics)

    def metric_table(self, title: str, metrics) -> list[str]:
        header = ["metric"] + list(self.engines) + ["shapeshift"] + [
            f"shapeshift / {e}" for e in self.engines]
        rows = []
        for label, getter, digits in metrics:
            values = [self.figure(e, getter) for e in self.engines]
            if all(v is None for v in values):
                continue
            cells = [fmt(int(v) if digits == 0 and v is not None else v, digits or 3)
                     for v in values]
            rows.append([label] + cells + [self.shapeshift_cell(getter, digits or 3)]
                        + self.ratio_cells(getter))
        return [f"### {title}", ""] + table(header, rows) if rows else []

    def agreement_table(self) -> list[str]:
        """Max abs difference of each engine's outputs from torch eager's and
        from ONNX Runtime's, over the saved agreement cases (same tensors)."""
        references = [e for e in ("torch-eager", "ort") if (self.dir / f"{e}.npz").exists()]
        if not references:
            return []
        loaded = {e: np.load(self.dir / f"{e}.npz") for e in references}
        rows = []
        for engine in list(self.engines) + [SHAPESHIFT]:
            path = self.dir / f"{engine}.npz"
            if not path.exists():
                rows.append([engine] + ["no outputs" if engine != SHAPESHIFT or self.shapeshift is not None
                                        else self.shapeshift_note] * len(references))
                continue
            other = np.load(path)
            cells = []
            for reference in references:
                if reference == engine:
                    cells.append("—")
                    continue
                keys = loaded[reference].files
                missing = [k for k in keys if k not in other.files]
                if missing:
                    cells.append(f"missing outputs: {', '.join(missing[:3])}")
                    continue
                diff = max(float(np.max(np.abs(loaded[reference][k] - other[k]))) for k in keys)
                cells.append(f"{diff:.3g}")
            rows.append([engine] + cells)
        return ["### Agreement (max abs diff over the saved outputs, same inputs)", ""] + table(
            ["engine"] + [f"vs {r}" for r in references], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, help="markdown file (default: stdout)")
    args = parser.parse_args()
    machine_file = args.results / "machine.json"
    machine = json.loads(machine_file.read_text()) if machine_file.exists() else {}
    lines = ["# shapeshift vs peers", ""]
    for key, value in machine.items():
        lines.append(f"- {key}: {value}")
    probes = peer_costs.load_probes(args.results)
    limits = peer_costs.best_limits(probes)
    lines += probe_lines(probes)
    lines += ["", "Ratios are shapeshift / peer: below 1 means shapeshift is faster or smaller.", ""]
    for model_dir in sorted(p for p in args.results.iterdir() if p.is_dir()):
        lines += ModelResults(model_dir, limits).section()
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
