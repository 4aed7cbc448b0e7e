"""`python -P -m hooks`: one Claude Code hook event on stdin, dispatched to its handler. The
form older settings entries use; `claudetto setup` now writes the cheaper `-I -S -c` entry
(see hooks/entry.py)."""

from hooks.entry import run

run()
