"""``python -m citewise.cli``: the same command line as ``citewise``."""

from citewise.cli import main

main()
