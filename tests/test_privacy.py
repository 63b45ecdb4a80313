"""Privacy of the default setup (issue 43, item 1): citewise's default commands reach
nothing but loopback and write nothing outside CITEWISE_HOME. Real commands in subprocesses
(the bundled models, a fresh HOME), no mocks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WARRANTY = "# Warranty\n\nThe laptop warranty lasts 24 months from the date of purchase.\n"

pytestmark = pytest.mark.slow  # each test spawns citewise, which loads the embedding model


def _environ(home: Path) -> dict[str, str]:
    """The environment of a user whose HOME is ``home`` and who set nothing about
    telemetry or caches (citewise's own variables dropped too)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CITEWISE_", "XDG_", "ORT_", "HF_"))}
    env.update(HOME=str(home), CITEWISE_HOME=str(home / ".citewise"),
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO),
                                           os.environ.get("PYTHONPATH", "")]))
    return env


def _docs(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "warranty.md").write_text(WARRANTY, encoding="utf-8")
    return docs


def test_ingest_and_ask_write_nothing_outside_citewise_home(tmp_path) -> None:
    """ONNX Runtime 1.32 wrote a device id and a telemetry queue under
    ~/.cache/Microsoft/DeveloperTools/ as soon as it was imported."""
    home = tmp_path / "user"
    home.mkdir()
    docs = _docs(tmp_path)
    env = _environ(home)
    citewise = [sys.executable, "-m", "citewise"]
    ingest = subprocess.run([*citewise, "ingest", str(docs)], env=env, cwd=tmp_path,
                            check=False, capture_output=True, text=True, timeout=600)
    assert ingest.returncode == 0, ingest.stderr[-2000:]
    ask = subprocess.run([*citewise, "ask", "How long is the laptop warranty?"], env=env,
                         cwd=tmp_path, check=False, capture_output=True, text=True, timeout=600)
    assert ask.returncode == 0, ask.stderr[-2000:]
    assert "24 months" in ask.stdout
    outside = sorted(str(p.relative_to(home)) for p in home.rglob("*")
                     if not p.is_relative_to(home / ".citewise"))
    assert outside == []


def _can_isolate() -> str | None:
    """Why a network namespace test cannot run here (None when it can)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux (unshare --net --mount)"
    if not (shutil.which("unshare") and shutil.which("ip") and shutil.which("mount")):
        return "needs unshare, ip and mount"
    probe = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private",
                            "ip", "link", "set", "lo", "up"], check=False, capture_output=True)
    return None if probe.returncode == 0 else "unshare --net is not permitted here"


def test_default_commands_reach_nothing_but_loopback(tmp_path) -> None:
    """``ingest``, ``ask``, ``serve`` (a chat, and up for 20 s: ONNX Runtime's telemetry
    called Microsoft about 12 s after a model loaded) and ``mcp`` (a search) in a network
    namespace where every name lookup and every web connection to any address is seen."""
    why = _can_isolate()
    if why:
        pytest.skip(why)
    home = tmp_path / "user"
    home.mkdir()
    _docs(tmp_path)
    (tmp_path / "home").mkdir()
    env = _environ(home)
    run = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private",
                          sys.executable, "-m", "tests.netguard", str(tmp_path), "20"],
                         env=env, cwd=REPO, check=False, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    # the guard sees what it must see: a lookup and an outside connection of its own
    assert any("probe.invalid" in c for c in out["canaries"]), out
    assert any(c.startswith("tcp:443 to ") for c in out["canaries"]), out
    assert out["ingest"] == 0 and out["ask"] == 0 and "24 months" in out["answer"], out
    assert out["serve"] == 200 and out["chat"] == 200, out
    assert out["mcp"] == [["id", "jsonrpc", "result"]] * 2, out
    assert out["contacts"] == [], out
