"""Runs citewise's default commands inside a network namespace that records any attempt to
reach the outside (issue 43, item 1). Started by tests/test_privacy.py as root through
``unshare --net --mount``; prints one JSON object: what the commands did and every outside
contact seen.

The namespace has only loopback, with every IPv4 and IPv6 address routed to it as local (so
a connection to any outside address arrives here instead of failing silently), and
/etc/resolv.conf bind-mounted to name 127.0.0.1 as the resolver: a UDP and a TCP listener on
port 53 record every name lookup, and TCP listeners on 80 and 443 (on every address) record
every web connection. Loopback traffic of the commands themselves (the server on 127.0.0.1,
its client) uses other ports and is not recorded.

Usage: ``python -m tests.netguard WORKDIR SECONDS`` with WORKDIR holding ``docs/`` and
``home/`` (CITEWISE_HOME); the server and the MCP server are kept up SECONDS each.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

CONTACTS: list[str] = []


def _udp(port: int) -> None:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    while True:
        data, addr = s.recvfrom(4096)
        CONTACTS.append(f"udp:{port} from {addr[0]}: {_qname(data)}")


def _qname(packet: bytes) -> str:
    """The first question's name of a DNS query (best effort)."""
    labels, i = [], 12
    while i < len(packet) and packet[i]:
        n = packet[i]
        labels.append(packet[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return ".".join(labels)


def _tcp(port: int) -> None:
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.listen(16)
    while True:
        conn, addr = s.accept()
        local = conn.getsockname()[0]
        CONTACTS.append(f"tcp:{port} to {local} from {addr[0]}")
        conn.close()


def _isolate() -> None:
    """Loopback up, every address local, the resolver on 127.0.0.1."""
    for cmd in (["ip", "link", "set", "lo", "up"],
                ["ip", "route", "add", "local", "default", "dev", "lo"],
                ["ip", "-6", "route", "add", "local", "default", "dev", "lo"]):
        subprocess.run(cmd, check=True)
    resolv = Path(tempfile.mkdtemp()) / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    subprocess.run(["mount", "--bind", str(resolv), "/etc/resolv.conf"], check=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(workdir: Path, seconds: float) -> dict[str, object]:
    _isolate()
    for target, port in ((_udp, 53), (_tcp, 53), (_tcp, 80), (_tcp, 443)):
        threading.Thread(target=target, args=(port,), daemon=True).start()
    time.sleep(0.2)
    # the listeners work: a lookup and a connection to an outside address are seen
    try:
        socket.getaddrinfo("probe.invalid", 443)
    except OSError:
        pass
    socket.create_connection(("203.0.113.9", 443), timeout=5).close()
    time.sleep(0.2)
    canaries = list(CONTACTS)
    CONTACTS.clear()

    env = dict(os.environ)
    env["CITEWISE_HOME"] = str(workdir / "home")
    citewise = [sys.executable, "-m", "citewise"]
    out: dict[str, object] = {"canaries": canaries}
    run = subprocess.run([*citewise, "ingest", str(workdir / "docs")], env=env,
                         check=False, capture_output=True, text=True, timeout=600)
    out["ingest"] = run.returncode
    run = subprocess.run([*citewise, "ask", "How long is the laptop warranty?"], env=env,
                         check=False, capture_output=True, text=True, timeout=600)
    out["ask"] = run.returncode
    out["answer"] = run.stdout[-400:]

    port = _free_port()
    serve = subprocess.Popen([*citewise, "serve", "--port", str(port)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mcp = subprocess.Popen([*citewise, "mcp"], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert mcp.stdin is not None and mcp.stdout is not None
    started = time.monotonic()
    health = None
    while health is None and time.monotonic() - started < 120:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) as r:
                health = r.status
        except OSError:
            time.sleep(0.5)
    out["serve"] = health
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "netguard", "version": "0"}}}
    calls = [request, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "laptop warranty"}}}]
    for call in calls:
        mcp.stdin.write((json.dumps(call) + "\n").encode())
        mcp.stdin.flush()
    replies = [json.loads(mcp.stdout.readline()) for _ in range(2)]
    out["mcp"] = [sorted(r) for r in replies]
    with urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/api/chat", method="POST",
            data=json.dumps({"query": "How long is the laptop warranty?"}).encode(),
            headers={"content-type": "application/json"}), timeout=300) as r:
        out["chat"] = r.status
    time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    serve.terminate()
    mcp.stdin.close()
    serve.wait(30)
    mcp.wait(30)
    time.sleep(0.5)
    out["contacts"] = list(CONTACTS)
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), float(sys.argv[2]))))
