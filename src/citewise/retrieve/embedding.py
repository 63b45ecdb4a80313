"""The embedders' old home, kept as an alias of :mod:`citewise.embed` for the modules that
still import it from here (the engine, the answerers, the retriever); new code imports
:mod:`citewise.embed`."""

from citewise.embed import *  # noqa: F403
from citewise.embed import __all__  # noqa: F401  (the same names)
