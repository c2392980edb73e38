"""`python -m baton ARGS...` is `baton ARGS...`."""

from .cli import main

main()
