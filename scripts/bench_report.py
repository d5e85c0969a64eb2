#!/usr/bin/python3
"""Helper of scripts/bench.sh: reads the JSON the benchmarks wrote, writes the Markdown report and
the gnuplot data and script for the chart. Standard library only (Debian's /usr/bin/python3).

  bench_report.py line ox|llama|kernels FILE.json     one-line summary (checks the JSON parses)
  bench_report.py report --work DIR --report OUT.md --chart-png NAME --chart-dir DIR ...

--work DIR holds what bench.sh wrote: kernels-1.json and kernels-2.json (before and after the
models), manifest.tsv (one line per model file:
key, label, shape, type, path) and runs/KEY/{inspect.json, ox-*.json, llama.json}.
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys


def fail(message):
    print(f"bench_report.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: not valid JSON ({e})")


# ---------------------------------------------------------------------------------------------
# Results of the two tools, as {test name: {"mean", "sd", "median", "min", "max"}}; the
# median and range come from the per-run samples both tools report (samples_ts).


def summary(mean, sd, samples):
    return {"mean": mean, "sd": sd,
            "median": statistics.median(samples) if samples else mean,
            "min": min(samples) if samples else mean,
            "max": max(samples) if samples else mean}


def ox_results(paths):
    """oxinfer bench --json: a list of {test, tok_s (mean), stddev, samples_ts, threads,
    model_bytes, type}, with bandwidth_gbs (per run) and bound_fraction for --bandwidth runs."""
    tests, model_bytes, wtype, threads = {}, None, None, None
    for path in paths:
        data = load_json(path)
        if not isinstance(data, list):
            fail(f"{path}: expected a JSON list from oxinfer bench --json")
        for row in data:
            try:
                tests[row["test"]] = summary(float(row["tok_s"]), float(row["stddev"]),
                                             [float(x) for x in row.get("samples_ts", [])])
                if "bound_fraction" in row:  # bench --bandwidth: measured right before each run
                    bandwidths = [float(x) for x in row["bandwidth_gbs"]]
                    if not bandwidths or min(bandwidths) <= 0:
                        raise ValueError("bandwidth_gbs must list each run's positive bandwidth")
                    tests[row["test"]]["bandwidth_gbs"] = bandwidths
                    tests[row["test"]]["bound_fraction"] = float(row["bound_fraction"])
                model_bytes = int(row["model_bytes"])
                wtype = row["type"]
                threads = int(row["threads"])
            except (KeyError, TypeError, ValueError) as e:
                fail(f"{path}: unexpected oxinfer bench row {row!r} ({e})")
    return tests, model_bytes, wtype, threads


def llama_results(path):
    """llama-bench -o json: a list of test objects with n_prompt, n_gen, avg_ts, stddev_ts,
    samples_ts, model_size, n_threads."""
    data = load_json(path)
    if not isinstance(data, list):
        fail(f"{path}: expected a JSON list from llama-bench -o json")
    tests, model_size = {}, None
    global LLAMA_BUILD
    for row in data:
        if row.get("build_commit", "unknown") != "unknown":
            LLAMA_BUILD = f"build {row.get('build_number', '?')}, commit {row['build_commit']}"
        try:
            n_prompt, n_gen = int(row["n_prompt"]), int(row["n_gen"])
            if n_prompt > 0 and n_gen == 0:
                name = f"pp{n_prompt}"
            elif n_gen > 0 and n_prompt == 0:
                name = f"tg{n_gen}"
            else:
                name = f"pp{n_prompt}+tg{n_gen}"
            tests[name] = summary(float(row["avg_ts"]), float(row["stddev_ts"]),
                                  [float(x) for x in row.get("samples_ts", [])])
            model_size = int(row["model_size"])
        except (KeyError, TypeError, ValueError) as e:
            fail(f"{path}: unexpected llama-bench row ({e})")
    return tests, model_size


LLAMA_BUILD = ""


def kernels_results(path):
    data = load_json(path)
    try:
        return {"bandwidth_gbs": float(data["bandwidth_gbs"]),
                "peak_gflops": float(data["peak_gflops"]),
                "threads": int(data["threads"]), "cpu": data.get("cpu", ""),
                "isa": data.get("isa", ""), "kernels": data.get("kernels", [])}
    except (KeyError, TypeError, ValueError) as e:
        fail(f"{path}: unexpected oxinfer bench --kernels JSON ({e})")


def matrix_elements(path):
    """From oxinfer inspect --json: the elements of the matrices every token passes through
    (2-D weights except embedding tables and the LM head), and of the LM head (output.weight, or
    the token embedding when the head is tied to it)."""
    data = load_json(path)
    body, head, embd = 0, None, None
    for t in data.get("tensors", []):
        name, shape = t.get("name", ""), t.get("shape", [])
        if len(shape) != 2:
            continue  # norms, biases; 3-D expert stacks of MoE models would need top-k weighting
        n = shape[0] * shape[1]
        if name == "output.weight":
            head = n
        elif name == "token_embd.weight":
            embd = n
        elif name.endswith("token_embd.weight"):
            continue  # other embedding lookups (e.g. per-layer embeddings) are not products
        else:
            body += n
    if body == 0:
        fail(f"{path}: no 2-D weight tensors found")
    return body, head if head is not None else (embd or 0), head is None


# ---------------------------------------------------------------------------------------------
# Formatting


def fmt_rate(x):
    if x is None:
        return "–"
    if x >= 1000:
        return f"{x:.0f}"
    if x >= 100:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_ms(r):
    """Median and range: 'median (min-max)'."""
    return f"{fmt_rate(r['median'])} ({fmt_rate(r['min'])}-{fmt_rate(r['max'])})"


def fmt_count(n):
    return f"{n / 1e6:.0f} M" if n >= 1e7 else f"{n / 1e6:.2f} M"


def fmt_bytes(n):
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    return f"{n / 1e6:.1f} MB"


def fmt_pct(x):
    return "–" if x is None else f"{100 * x:.0f}%"


def test_key(name):
    m = re.match(r"(pp|tg)(\d+)$", name)
    return (0 if m.group(1) == "pp" else 1, int(m.group(2))) if m else (2, 0)


# ---------------------------------------------------------------------------------------------
# Machine description


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


INTERESTING_FLAGS = [
    # x86 (as /proc/cpuinfo names them) and arm64 ("Features")
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
    "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
    "asimd", "asimdhp", "asimddp", "sve", "sve2", "bf16", "i8mm", "sme",
]


def machine():
    cpuinfo = read("/proc/cpuinfo")
    model = ""
    for key in ("model name", "Hardware", "Model"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", cpuinfo, re.M)
        if m:
            model = m.group(1).strip()
            break
    model = model or platform.processor() or platform.machine()
    flags = set()
    for m in re.finditer(r"^(?:flags|Features)\s*:\s*(.+)$", cpuinfo, re.M):
        flags.update(m.group(1).split())
    cores = set()
    phys = core = None
    for line in cpuinfo.splitlines():
        if line.startswith("physical id"):
            phys = line.split(":", 1)[1].strip()
        elif line.startswith("core id"):
            core = line.split(":", 1)[1].strip()
        elif not line.strip():
            if core is not None:
                cores.add((phys, core))
            phys = core = None
    if core is not None:
        cores.add((phys, core))
    logical = os.cpu_count() or 0
    n_cores = len(cores) or logical
    meminfo = read("/proc/meminfo")
    mem = {}
    for key in ("MemTotal", "MemAvailable"):
        m = re.search(rf"^{key}:\s*(\d+) kB", meminfo, re.M)
        mem[key] = int(m.group(1)) * 1024 if m else None
    caches = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    if os.path.isdir(base):
        for index in sorted(os.listdir(base)):
            d = os.path.join(base, index)
            level, kind, size = (read(os.path.join(d, f)).strip() for f in ("level", "type", "size"))
            if level and size and kind != "Instruction":
                caches.append(f"L{level}{'d' if kind == 'Data' else ''} {size}")
    os_name = ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', read("/etc/os-release"), re.M)
    if m:
        os_name = m.group(1)
    shown = [f.upper() for f in INTERESTING_FLAGS if f in flags]
    return {
        "model": model, "arch": platform.machine(), "cores": n_cores, "logical": logical,
        "flags": shown, "vm": "hypervisor" in flags, "mem_total": mem["MemTotal"],
        "mem_available": mem["MemAvailable"], "caches": caches,
        "os": f"{os_name}, Linux {platform.release()}" if os_name else platform.platform(),
    }


# ---------------------------------------------------------------------------------------------
# The report


def build(args):
    work = args.work
    kernel_runs = [kernels_results(os.path.join(work, n))
                   for n in sorted(os.listdir(work)) if re.match(r"kernels-\d+\.json$", n)]
    if not kernel_runs:
        fail(f"{work}: no kernels-N.json")
    kernels = kernel_runs[0]
    # The machine's capability: the better of the runs (other load only ever lowers them).
    bandwidth = max(k["bandwidth_gbs"] for k in kernel_runs)
    peak = max(k["peak_gflops"] for k in kernel_runs)
    runs_text = "; ".join(f"{when} {k['bandwidth_gbs']:.1f} GB/s, {k['peak_gflops']:.1f} GFLOP/s"
                          for when, k in zip(["before", "after"] + ["then"] * 9, kernel_runs))

    rows = []  # one per model file, in manifest order
    with open(os.path.join(work, "manifest.tsv"), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            key, label, shape, wtype, path = line.rstrip("\n").split("\t")
            run = os.path.join(work, "runs", key)
            ox_files = sorted(os.path.join(run, n) for n in os.listdir(run) if n.startswith("ox-"))
            ox, model_bytes, ox_type, threads = ox_results(ox_files)
            body, head, tied = matrix_elements(os.path.join(run, "inspect.json"))
            llama_path = os.path.join(run, "llama.json")
            llama, llama_size = llama_results(llama_path) if os.path.exists(llama_path) else ({}, None)
            bounds, shares = {}, {}
            for name, res in ox.items():
                kind, n = test_key(name)
                if kind == 0:  # pp n: every token through the body, the head once (last token)
                    bounds[name] = peak * 1e9 / (2.0 * (body + head / n))
                elif kind == 1 and "bound_fraction" in res:
                    # tg with the bandwidth of each run: the share is the median of the runs' own
                    # shares, the bound (chart, llama.cpp's share) the one of their median bandwidth
                    # (the upper middle one for an even count, as bench picks bound_fraction)
                    middle = sorted(res["bandwidth_gbs"])[len(res["bandwidth_gbs"]) // 2]
                    bounds[name] = middle * 1e9 / model_bytes
                    shares[name] = res["bound_fraction"]
                elif kind == 1:  # tg: every token reads every weight once
                    bounds[name] = bandwidth * 1e9 / model_bytes
                if bounds.get(name) and name not in shares:
                    shares[name] = res["median"] / bounds[name]
            rows.append({"key": key, "label": label, "shape": shape, "type": wtype,
                         "file": os.path.basename(path), "ox": ox, "bytes": model_bytes,
                         "llama": llama, "llama_size": llama_size, "bounds": bounds, "shares": shares,
                         "body": body, "head": head, "tied": tied, "threads": threads})
    if not rows:
        fail("no benchmark results")
    tests = sorted({t for r in rows for t in r["ox"]}, key=test_key)
    have_llama = any(r["llama"] for r in rows)

    m = machine()
    out = []
    w = out.append
    w("# oxinfer benchmark report")
    w("")
    w(f"Written by `scripts/bench.sh{' --quick' if args.quick else ''}` on {args.date}; do not edit "
      "by hand (the hand-written notes are in [performance.md](performance.md)).")
    w("")
    mem = (f"{m['mem_total'] / 2**30:.1f} GiB RAM" if m["mem_total"] else "memory unknown")
    if m["mem_available"]:
        mem += f" ({m['mem_available'] / 2**30:.1f} GiB available at the end)"
    w(f"- **Machine:** {m['model']} ({m['arch']}{', virtual machine' if m['vm'] else ''}), "
      f"{m['cores']} cores / {m['logical']} threads, {mem}"
      + (f"; caches {', '.join(m['caches'])}" if m["caches"] else "") + f"; {m['os']}")
    w(f"- **CPU features:** {' '.join(m['flags']) or 'none of interest'}; kernels used: "
      f"`{kernels['isa']}`")
    w(f"- **Commit:** `{args.commit}`{' (' + args.commit_note + ')' if args.commit_note else ''}")
    w(f"- **Threads:** {args.threads}; **repetitions:** {args.reps} per test after one warm-up run"
      f"; load average {args.load_start} at the start, {read('/proc/loadavg').split(' ')[0] or '?'}"
      " at the end (the benchmark's own threads count as load)"
      + (f"; the run took {args.elapsed // 60} min {args.elapsed % 60} s" if args.elapsed else ""))
    w(f"- **Measured:** read bandwidth {bandwidth:.1f} GB/s, FMA peak {peak:.1f} GFLOP/s, the "
      f"better of {len(kernel_runs)} runs of `oxinfer bench --kernels{' --quick' if args.quick else ''}`"
      f" with {kernels['threads']} threads ({runs_text})")
    if have_llama:
        w(f"- **llama.cpp:** `{args.llama_bench}`{' (' + LLAMA_BUILD + ')' if LLAMA_BUILD else ''}")
    w("")
    w(f"![tokens/s against the bounds]({args.chart_png})")
    w("")

    w("## Against the bounds")
    w("")
    w("Tokens/s are the median of the repetitions with their range (min-max); ratios and "
      "shares are of medians; each \"of bound\" cell is the share of the bound and the bound itself, "
      "except tg's: the median of each run's share of its own bound, and the range of those bounds.")
    w("")
    labels = []
    for r in rows:
        if r["label"] not in labels:
            labels.append(r["label"])
    for label in labels:
        group = [r for r in rows if r["label"] == label]
        g0 = group[0]
        head_note = "tied to the embedding" if g0["tied"] else "separate"
        w(f"### {label} (`{g0['shape']}`)")
        w("")
        w(f"{fmt_count(g0['body'])} matrix weights per token outside the embedding, LM head "
          f"{fmt_count(g0['head'])} ({head_note}).")
        w("")
        header = ["type", "model bytes"]
        for t in tests:
            header += [f"{t} tok/s", "of bound"]
        w("| " + " | ".join(header) + " |")
        w("|" + " --- |" * len(header))
        for r in group:
            cells = [r["type"], fmt_bytes(r["bytes"])]
            for t in tests:
                res, bound, share = r["ox"].get(t), r["bounds"].get(t), r["shares"].get(t)
                cells.append(fmt_ms(res) if res else "–")
                if res and "bound_fraction" in res:  # each run against its own bound: their range
                    run_bounds = [b * 1e9 / r["bytes"] for b in res["bandwidth_gbs"]]
                    cells.append(f"{fmt_pct(share)} of {fmt_rate(min(run_bounds))}-{fmt_rate(max(run_bounds))}")
                else:
                    cells.append(f"{fmt_pct(share)} of {fmt_rate(bound)}" if res and bound else "–")
            w("| " + " | ".join(cells) + " |")
        w("")
        if have_llama and any(r["llama"] for r in group):
            w("| type | test | oxinfer tok/s | llama.cpp tok/s | oxinfer / llama.cpp | llama.cpp of bound |")
            w("|" + " --- |" * 6)
            for r in group:
                for t in tests:
                    o, l, bound = r["ox"].get(t), r["llama"].get(t), r["bounds"].get(t)
                    if not o or not l:
                        continue
                    w(f"| {r['type']} | {t} | {fmt_ms(o)} | {fmt_ms(l)} | "
                      f"{o['median'] / l['median']:.2f} | "
                      f"{fmt_pct(l['median'] / bound) if bound else '–'} |")
            w("")

    bw_runs = " / ".join(f"{k['bandwidth_gbs']:.1f}" for k in kernel_runs)
    peak_runs = " / ".join(f"{k['peak_gflops']:.1f}" for k in kernel_runs)
    w("## Kernels")
    w("")
    w(f"`oxinfer bench --kernels`, {kernels['threads']} threads, before and after the models "
      "(each run's figures, separated by /; the shares, the better run's, are of the bandwidth "
      "or peak measured in turn with each kernel, or of the better run's bandwidth and peak for "
      "older binaries): "
      f"read bandwidth {bw_runs} GB/s, FMA peak {peak_runs} GFLOP/s.")
    w("")
    if kernels["kernels"]:
        w("| type | GEMV GB/s | of bandwidth | GEMM GFLOP/s | of FMA peak | ISA |")
        w("| --- | --- | --- | --- | --- | --- |")
        for k in kernels["kernels"]:
            same = [next((x for x in run["kernels"] if x.get("type") == k.get("type")
                          and x.get("layout", "rows") == k.get("layout", "rows")), None)
                    for run in kernel_runs]
            same = [x for x in same if x]
            gemv = [x["gemv_gbs"] for x in same]
            gemm = [x["gemm_gflops"] for x in same]
            # Each kernel's share of the bandwidth and peak measured in turn with it, where the
            # JSON has them (gemv_bandwidth_gbs marks it); otherwise of the runs' better figures.
            gemv_share = max(x["gemv_gbs"] / x["gemv_bandwidth_gbs"] if "gemv_bandwidth_gbs" in x
                             else x["gemv_gbs"] / bandwidth for x in same)
            gemm_share = max(x["gemm_gflops"] / x["gemm_peak_gflops"] if "gemv_bandwidth_gbs" in x
                             else x["gemm_gflops"] / peak for x in same)
            layout = " (interleaved)" if k.get("layout") == "interleaved" else ""
            w(f"| {k.get('type', '?')}{layout} | {' / '.join(f'{v:.1f}' for v in gemv)} | "
              f"{fmt_pct(gemv_share)} | {' / '.join(f'{v:.1f}' for v in gemm)} | "
              f"{fmt_pct(gemm_share)} | {k.get('isa', '')} |")
        w("")

    w("## How this was measured")
    w("")
    w("- Checkpoints: `oxinfer synth --arch ARCH --shape SHAPE --type TYPE` (the real model's "
      "shape, random weights: speed does not depend on the values), GGUF files, cached in "
      f"`{args.models_dir}`.")
    w(f"- oxinfer: `oxinfer bench --model FILE -p N -n 0 -r {args.reps} -t {args.threads} --json` "
      f"for each ppN and `-p 0 -n N --bandwidth` for tgN; one untimed warm-up run each; default KV cache (f32).")
    if have_llama:
        w(f"- llama.cpp: `llama-bench -m FILE {args.llama_args} -t {args.threads} "
          f"-r {args.reps} -o json` on the same files, run right before or after oxinfer on each file "
          "(the order alternates from file to file) so that slow phases of the machine hit both; "
          "llama-bench's defaults otherwise (KV cache f16, flash attention auto, one warm-up).")
    w("- **tg bound** = read bandwidth / `model_bytes` (the weight bytes one decoded "
      "token reads, as `oxinfer bench` counts them). The tg runs use `--bandwidth`: the read "
      "bandwidth is measured right before each timed run (this machine's drifts from minute to "
      "minute), the share is the median of the runs' shares (`bound_fraction`), the bounds "
      "shown are the runs' range, and the chart and llama.cpp's share use the bound of their "
      "median bandwidth; without per-run figures the better kernel-run bandwidth serves. The "
      "measurement (1 GiB read) also leaves the caches cold before each oxinfer tg run, which "
      "llama-bench's runs are not. The bound ignores the KV cache reads "
      "(small at these lengths) and assumes the whole bandwidth is usable by decoding.")
    w("- **pp bound** (arithmetic) = measured FMA peak / FLOPs per prompt token, FLOPs per token "
      "= 2 × (multiply-adds of every 2-D weight matrix a token passes through, from "
      "`oxinfer inspect --json`, without the embedding lookup) + 2 × the LM head's multiply-adds "
      "/ N (logits only for the last of N tokens). Attention's own products (QKᵀ, PV: "
      "4 × layers × heads × head_dim × the positions attended) and norms, RoPE and activations "
      "are not counted, so the bound is a little optimistic for long prompts; the FMA peak is "
      "fp32 FMA; GEMMs built on bf16 or int8 dot-product instructions (`vdpbf16ps`, `vpdpbusd`) "
      "could exceed it where the CPU has them.")
    w("- Spread: both tools report each timed run (`samples_ts`); the tables give their median "
      "and range, the chart the median with the range as error bars.")
    w("")
    text = "\n".join(out)
    with open(args.report, "w", encoding="utf-8") as f:
        f.write(text)

    # Chart data: one line per model file; per test: oxinfer median, min, max, llama.cpp median,
    # min, max, bound.
    with open(os.path.join(args.chart_dir, "chart.dat"), "w", encoding="utf-8") as f:
        for r in rows:
            cols = [f'"{r["label"]}"', f'"{r["type"]}"']
            for t in tests:
                o, l, b = r["ox"].get(t), r["llama"].get(t), r["bounds"].get(t)
                for res in (o, l):
                    cols += [f"{res[k]:.4f}" for k in ("median", "min", "max")] if res else ["NaN"] * 3
                cols += [f"{b:.4f}" if b else "NaN"]
            f.write(" ".join(cols) + "\n")
    dat = os.path.join(args.chart_dir, "chart.dat")
    ncat = len(rows)
    width = max(900, 120 * ncat + 200)
    gp = [
        f"set terminal {args.terminal} noenhanced size {width},{300 * len(tests) + 60} "
        "font 'DejaVu Sans,10'",
        f"set output '{os.path.join(args.chart_dir, 'chart.png')}'",
        "set style data histograms",
        "set style histogram errorbars gap 2 lw 1",
        "set style fill solid 0.8 border -1",
        "set boxwidth 0.9",
        "set grid ytics",
        "set yrange [0:*]",
        "set offsets 0, 0, graph 0.08, 0",
        "set bmargin 3.5",
        "set ylabel 'tokens/s'",
        "set key outside right top vertical",
        "set xtics nomirror",
        f"set multiplot layout {len(tests)},1 title 'oxinfer {args.commit}, {args.threads} threads, "
        f"{args.date}' font ',12'",
    ]
    for i, t in enumerate(tests):
        c = 3 + 7 * i
        kind = "bandwidth bound" if test_key(t)[0] == 1 else "FMA bound"
        xtic = 'xtic(stringcolumn(1)."\\n".stringcolumn(2))'
        series = [f"'{dat}' using {c}:{c + 1}:{c + 2}:{xtic} title 'oxinfer' lc rgb '#1f77b4'"]
        if have_llama:
            series.append(f"'' using {c + 3}:{c + 4}:{c + 5} title 'llama.cpp' lc rgb '#ff7f0e'")
        series.append(f"'' using {c + 6}:($0*0):($0*0) title '{kind}' lc rgb '#bbbbbb' fs pattern 4")
        gp.append(f"set title '{t}'")
        gp.append("plot " + ", \\\n     ".join(series))
    gp.append("unset multiplot")
    with open(os.path.join(args.chart_dir, "chart.gp"), "w", encoding="utf-8") as f:
        f.write("\n".join(gp) + "\n")


def line(kind, path):
    """One line of progress output; also checks that the file is the JSON we expect."""
    if kind == "ox":
        tests, model_bytes, _, _ = ox_results([path])
        print(", ".join(f"{t} {fmt_ms(r)} tok/s"
                        + (f" ({fmt_pct(r['bound_fraction'])} of the bandwidth bound)" if "bound_fraction" in r else "")
                        for t, r in sorted(tests.items(), key=lambda x: test_key(x[0])))
              or "no tests")
    elif kind == "llama":
        tests, _ = llama_results(path)
        print(", ".join(f"{t} {fmt_ms(r)} tok/s" for t, r in sorted(tests.items(), key=lambda x: test_key(x[0])))
              or "no tests")
    elif kind == "kernels":
        k = kernels_results(path)
        print(f"bandwidth {k['bandwidth_gbs']:.1f} GB/s, FMA peak {k['peak_gflops']:.1f} GFLOP/s, "
              f"{k['threads']} threads, {k['isa']} kernels")
    else:
        fail(f"unknown kind {kind}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "line":
        line(sys.argv[2], sys.argv[3])
        return
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("command", choices=["report"])
    p.add_argument("--work", required=True)
    p.add_argument("--report", required=True, help="the Markdown file to write")
    p.add_argument("--chart-dir", required=True, help="where chart.dat, chart.gp and chart.png go")
    p.add_argument("--chart-png", required=True, help="the chart's path as the report links it")
    p.add_argument("--terminal", default="pngcairo")
    p.add_argument("--commit", required=True)
    p.add_argument("--commit-note", default="")
    p.add_argument("--date", required=True)
    p.add_argument("--threads", required=True)
    p.add_argument("--reps", required=True)
    p.add_argument("--load-start", default="?")
    p.add_argument("--models-dir", default="build/bench-models")
    p.add_argument("--llama-bench", default="")
    p.add_argument("--llama-args", default="")
    p.add_argument("--elapsed", type=int, default=0, help="seconds the measurements took")
    p.add_argument("--quick", action="store_true")
    build(p.parse_args())


if __name__ == "__main__":
    main()
