"""Moved to :mod:`citewise.text.analysis` (text analysis is its own layer, below the stores).

This alias keeps old imports working while branches that still use it are merged; import
``citewise.text.analysis`` instead. To be removed once nothing imports it.
"""

from citewise.text.analysis import *  # noqa: F403
