"""`python -P -m hooks`: one Claude Code hook event on stdin, dispatched to its handler."""

import sys

from hooks.entry import main

sys.exit(main())
