"""citewise: answers questions from your own documents and cites where each answer comes from."""

import os as _os

# ONNX Runtime (the embedding model, the reranker, OCR) sends usage telemetry to Microsoft
# from official builds since 1.32 (a TLS connection to mobile.events.data.microsoft.com some
# seconds after a model loads) and keeps a device id and an event queue under
# ~/.cache/Microsoft/DeveloperTools/. Its opt-out is read once, when the library is first
# imported, so it is set here, before any part of citewise can import it. A value the user
# set (ORT_DISABLE_TELEMETRY=0) is kept.
if not _os.environ.get("ORT_DISABLE_TELEMETRY"):
    _os.environ["ORT_DISABLE_TELEMETRY"] = "1"

__version__ = "0.1.0"
