"""Moved to :mod:`citewise.text.language` (text analysis is its own layer, below the stores).

This alias keeps old imports working while branches that still use it are merged; import
``citewise.text.language`` instead. To be removed once nothing imports it.
"""

from citewise.text.language import *  # noqa: F403
