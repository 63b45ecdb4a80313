"""Dense search at 1M chunks through inverted lists: 4-bit product-quantisation codes scanned
by faiss (citewise.store.dense_index.IVFPQLists, method ``ivf_pq``) and int8 codes
(IVFLists, method ``ivf``) against the int8 flat scan and exact search, in one run (issue 22,
item 2).

Recall (real minilm embeddings of SciFact + XQuAD en / ru / zh, the chunks and queries of
``benchmarks/dense_index.py``, cached in ``--work``): recall@10 of ``ivf`` (its default
shortlist, 100 for a top 10) and ``ivf_pq`` against exact search, for each list count and
scanned share, every ``--query-step``-th query. ``ivf_pq``'s shortlist is given as a share of
the chunks (``--pq-shortlists``, default 0.1%: what its default ``max(40 k, 1,000)`` is for a
top 10 at 1M), so the 66k real chunks see the same density of near misses as 1M would.

Latency (generated vectors as in ``benchmarks/dense_index.py``: real rows plus Gaussian noise
0.05 a dimension, renormalised; ``--chunks`` of them): one ``DenseIndex`` built with lists,
its build time split into codes and lists, then exact, int8 (flat scan of every code) and ivf
and ivf_pq taking turns query by query, top 50 (also under a filter keeping 10% of the
chunks); p50 / p95 ms and the ratios to exact's, int8's and ivf's (at the first of
``--latency-scans``) p50, and the agreement of each method's top 10 with exact's.

Usage::

    python benchmarks/dense_ivf.py [--chunks 1000000] [--queries 100] [--query-step 4]
        [--scans 0.2,0.3] [--latency-scans 0.3,0.2] [--pq-shortlists 0.001]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from dense_index import generated, real_embeddings  # noqa: E402
from stores import load, pct  # noqa: E402

from citewise.store.dense_index import (  # noqa: E402
    DenseIndex,
    DenseMethod,
    IVFLists,
    IVFPQLists,
    int8_scales,
    ivf_list_count,
)


def recall(chunks: np.ndarray, queries: dict[str, np.ndarray], lists: list[int],
           scans: list[float], shortlists: list[float], pq_dims: list[int]) -> None:
    n, dim = chunks.shape
    rowids = np.arange(n, dtype=np.int64)
    exact = DenseIndex.build(0, rowids, chunks, exact_below=n + 1)
    want = {name: [exact.top(q, 10)[1] for q in qs] for name, qs in queries.items()}
    print(f"\n# recall@10 against exact: {n:,} real chunks; {load()}\n")
    print("| method | lists (chunks a list) | scanned share | shortlist | " + " | ".join(queries)
          + " | all | build s |\n|---|---|---|---|" + "---|" * (len(queries) + 2))
    for count in lists:
        for method, dims in [(DenseMethod.IVF, 0)] + [(DenseMethod.IVF_PQ, d) for d in pq_dims]:
            t0 = time.perf_counter()
            if method is DenseMethod.IVF:
                index = DenseIndex.build(0, rowids, chunks, exact_below=0, ivf_from=0,
                                         ivf_lists=count, ivf_method=method.value)
            else:
                index = DenseIndex(0, rowids, chunks, ivf_from=0,
                                   pq=IVFPQLists.build(chunks, count, dims_per_code=dims))
            build = time.perf_counter() - t0
            sizes = [0.0] if method is DenseMethod.IVF else shortlists
            for scan in scans:
                for share in sizes:
                    index.ivf_scan = scan
                    index.pq_rescore_factor, index.pq_rescore_min = 0, max(10, round(share * n))
                    cells, every = [], []
                    for name, qs in queries.items():
                        got = [float(np.sum(index.top(q, 10)[1] >= w[9] - 1e-6)) / 10
                               for q, w in zip(qs, want[name], strict=True)]
                        cells.append(f"{np.mean(got):.4f}")
                        every += got
                    short = ("100" if method is DenseMethod.IVF
                             else f"{index.pq_rescore_min:,} ({share:.1%})")
                    name = method.value if method is DenseMethod.IVF else (
                        f"ivf_pq, {dims} dims a 4-bit code ({dim * 4 // (8 * dims)} bytes)")
                    print(f"| {name} | {count:,} ({n // count}) | {scan:.0%} | {short} | "
                          + " | ".join(cells) + f" | **{np.mean(every):.4f}** | {build:.1f} |",
                          flush=True)


def latency(real: np.ndarray, real_queries: np.ndarray, n: int, n_queries: int,
            scans: list[float]) -> None:
    vectors = generated(real, n, seed=n)
    rowids = np.arange(n, dtype=np.int64)
    t0 = time.perf_counter()
    scales = int8_scales(vectors)
    t1 = time.perf_counter()
    ivf = IVFLists.build(vectors, scales, ivf_list_count(n))
    t2 = time.perf_counter()
    pq = IVFPQLists.build(vectors, ivf_list_count(n))
    t3 = time.perf_counter()
    t4 = time.perf_counter()
    opened = IVFPQLists.from_blob(pq.serialized(), n, vectors.shape[1])  # as after a restart
    t5 = time.perf_counter()
    assert opened is not None and (opened.assign == pq.assign).all()
    del opened
    index = DenseIndex(0, rowids, vectors, scales, None, ivf=ivf, ivf_from=0, pq=pq)
    print(f"\n# latency: {n:,} generated chunks; ivf: {ivf.lists:,} lists built in "
          f"{t2 - t1:.1f} s (scales {t1 - t0:.1f} s), arrays {ivf.nbytes / 1e6:,.0f} MB; ivf_pq: "
          f"{pq.lists:,} lists built in {t3 - t2:.1f} s, arrays {pq.nbytes / 1e6:,.0f} MB, "
          f"opened from its saved bytes in {t5 - t4:.2f} s; "
          f"vectors {vectors.nbytes / 1e6:,.0f} MB; {load()}")
    rng = np.random.default_rng(7)
    qs = generated(real_queries[rng.permutation(real_queries.shape[0])[:n_queries]],
                   n_queries, seed=1)
    tenth = np.arange(0, n, 10, dtype=np.int64)  # a filter keeping 10% of the chunks
    Case = tuple[DenseMethod, float, np.ndarray | None]
    methods: dict[str, Case] = {"exact": (DenseMethod.EXACT, 0.0, None),
                                "int8 (flat scan)": (DenseMethod.INT8, 0.0, None)}
    methods |= {f"ivf, {scan:.0%} scanned": (DenseMethod.IVF, scan, None) for scan in scans}
    methods |= {f"ivf_pq, {scan:.0%} scanned": (DenseMethod.IVF_PQ, scan, None)
                for scan in scans}
    methods |= {"exact, 10% filter": (DenseMethod.EXACT, 0.0, tenth),
                "ivf, 10% filter (every code of its chunks)": (DenseMethod.IVF, scans[0], tenth),
                f"ivf_pq, 10% filter ({scans[0]:.0%} of its chunks)": (DenseMethod.IVF_PQ,
                                                                      scans[0], tenth)}
    for method, scan, allowed in methods.values():
        index.ivf_scan = scan
        for q in qs[:3]:
            index.top(q, 50, allowed, method=method)
    times: dict[str, list[float]] = {k: [] for k in methods}
    tops: dict[str, list[list[int]]] = {k: [] for k in methods}
    for q in qs:
        for name, (method, scan, allowed) in methods.items():
            index.ivf_scan = scan
            t0 = time.perf_counter()
            ids, _ = index.top(q, 50, allowed, method=method)
            times[name].append((time.perf_counter() - t0) * 1000)
            tops[name].append(ids[:10].tolist())
    today = f"ivf, {scans[0]:.0%} scanned"
    base, flat, old = (pct(times[k], 50) for k in ("exact", "int8 (flat scan)", today))
    print(f"\n| dense top-50 | p50 ms | p95 ms | p50 / exact | p50 / int8 | p50 / {today} "
          "| top 10 = exact's |\n|---|---|---|---|---|---|---|")
    for name, ts in times.items():
        ref = "exact, 10% filter" if "filter" in name else "exact"
        same = np.mean([a == b for a, b in zip(tops[name], tops[ref], strict=True)])
        print(f"| {name} | {pct(ts, 50):.2f} | {pct(ts, 95):.2f} | {pct(ts, 50) / base:.3f} "
              f"| {pct(ts, 50) / flat:.3f} | {pct(ts, 50) / old:.3f} | {same:.1%} |")
    print(f"\n# {time.strftime('%H:%M:%S')} {load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--query-step", type=int, default=4)
    ap.add_argument("--lists", default="", help="list counts for the recall table "
                    "(default: the rule's for the real chunks, and 4x it)")
    ap.add_argument("--scans", default="0.2,0.3")
    ap.add_argument("--latency-scans", default="0.3,0.2",
                    help="shares scanned in the latency table; the first is today's default")
    ap.add_argument("--pq-shortlists", default="0.001",
                    help="ivf_pq shortlists in the recall table, as shares of the chunks")
    ap.add_argument("--pq-dims", default="2",
                    help="dimensions a 4-bit sub-code covers, ivf_pq rows of the recall table "
                    "(the default index: 2)")
    ap.add_argument("--no-recall", action="store_true")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citewise-bench")
    args = ap.parse_args()
    print(f"# start {time.strftime('%H:%M:%S')} {load()}")
    chunks, queries = real_embeddings(args.work)
    real = np.concatenate(list(chunks.values()))
    if not args.no_recall:
        rule = ivf_list_count(real.shape[0])
        lists = [int(s) for s in args.lists.split(",")] if args.lists else [rule, 4 * rule]
        recall(real, {k: v[::args.query_step] for k, v in queries.items()}, lists,
               [float(s) for s in args.scans.split(",")],
               [float(s) for s in args.pq_shortlists.split(",")],
               [int(s) for s in args.pq_dims.split(",")])
    if args.no_latency:
        return
    latency(real, np.concatenate(list(queries.values())), args.chunks, args.queries,
            [float(s) for s in args.latency_scans.split(",")])
    print(f"\n# end {time.strftime('%H:%M:%S')} {load()}")


if __name__ == "__main__":
    main()
