"""The dashboard's data: what the screens show, read and judged off the UI thread.

Apart from the widgets (a widget draws; this reads), and apart from the core (the core
judges and removes; this only asks it and keeps the answers for the screens). No module
here imports a screen.
"""
