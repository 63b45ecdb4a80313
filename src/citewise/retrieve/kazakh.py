"""Moved to :mod:`citewise.text.kazakh` (text analysis is its own layer, below the stores).

This alias keeps old imports working while branches that still use it are merged; import
``citewise.text.kazakh`` instead. To be removed once nothing imports it.
"""

from citewise.text.kazakh import *  # noqa: F403
