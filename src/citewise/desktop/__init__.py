"""``citewise desktop``: the chat page in a native window, with its own local server.

Two parts, so the server can be used (and tested) without any GUI library:

- :mod:`citewise.desktop.server`: :class:`~citewise.desktop.server.LocalServer`, the HTTP API
  (``citewise.api.create_app``) under uvicorn in a background thread, on a free port of
  127.0.0.1 chosen by the operating system, with an admin key: ``CITEWISE_API_KEY`` when set,
  otherwise a random one made for this run. It is started before the window opens and stopped
  when the window closes (or on Ctrl-C / SIGTERM).
- :mod:`citewise.desktop.window`: the window, Qt WebEngine through PySide6 (the ``desktop``
  extra: ``pip install 'citewise[desktop]'``; without it :class:`~citewise.errors.DesktopError`
  names that command). The window shows the server's chat page and hands it the admin key the
  way the page already keeps it (``sessionStorage["citewise.adminKey"]``, set before the page's
  scripts run), so uploads and approvals work with no key typed. Files dropped on the window
  reach the page as an ordinary HTML5 drop and go through its upload path (the attachment card,
  its progress and errors). Links to other sites open in the system browser.
"""

from __future__ import annotations

from citewise.desktop.server import LocalServer

__all__ = ["LocalServer"]
