"""The Python installations the user's virtual environments run on.

A venv holds no interpreter of its own: `pyvenv.cfg` names the installation it was made from
(`home = /tmp/tmp.X/py/bin`, and `executable`, `command`, `base-prefix` beside it) and
`bin/python` is a link to it. A session that builds or unpacks a Python into a temp folder
(`uv python install --install-dir "$d"`, a `make install` with `--prefix="$d"`) and then makes
the project's `.venv` from it leaves nothing unique in the temp folder, yet removing it breaks
the venv: every `python` there fails to start. So the GC reads the `pyvenv.cfg` of the venvs in
the user's places (the project's `.venv`, `venv`, `env`; in the home, every environment of the
tools that keep them apart: virtualenvwrapper, pyenv, pipenv, poetry, uv tools, pipx) and keeps
an output any of them names (`gc_records.OutsideNames`, `in_use`), and so does an editable
install into one of the latter (`pipx install -e "$d/tool"`: the tool's venv imports the folder
through its `.pth`; the command in `~/.local/bin` leads only into the venv). A Jupyter kernel registered
for the user from such a venv (`python -m ipykernel install --user`) starts the interpreter its
`kernel.json` names: the same dependence, read from the home's kernel folders.
"""

from __future__ import annotations

import os

#: A place's own venv folders.
_OWN = (".venv", "venv", "env")
#: Folders of the home that hold one venv per entry.
_KEPT_APART = (".virtualenvs", ".pyenv/versions", ".local/share/virtualenvs", ".cache/pypoetry/virtualenvs",
               ".local/share/uv/tools", ".local/pipx/venvs", ".local/share/pipx/venvs")
#: Python installations of the home that `pip install -e` (or `conda develop`) writes into as into
#: a venv, though they are none: conda's base environments (`~/miniconda3/bin/pip install -e
#: "$d/lib"`, the everyday environment of many), and each Python uv installs (the second tuple).
_BASES = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba")
_BASES_APART = (".local/share/uv/python",)
#: Where Jupyter keeps the kernels a user registered (`--user`), in the home.
_KERNELS = (".local/share/jupyter/kernels", "Library/Jupyter/kernels")
#: Venvs (or kernels) of one folder read at most (each costs one small read).
_MAX_ENVS = 500


def venv_homes(place: str) -> list[tuple[str, str]]:
    """(pyvenv.cfg, path it names) for each absolute path the `pyvenv.cfg` of a venv of `place`
    names, as written (normalised) and real; the kept-apart environments too when `place` holds them."""
    from app.core.repository_rules import _ENVS, folders, installs_in, small_text

    venvs = [os.path.join(place, name) for name in _OWN]
    found: list[tuple[str, str]] = []
    for sub in _KEPT_APART:
        apart = folders(os.path.join(place, sub))[:_MAX_ENVS]
        venvs += apart
        for venv in apart if sub not in _ENVS else ():  # `pipx install -e "$d/tool"`: its `.pth` names the folder
            installs_in(venv, found)  # (a place's own venvs and `_ENVS` are read with its links)
    found += _base_installs(place)
    said: list[tuple[str, str]] = []
    for config in (os.path.join(venv, "pyvenv.cfg") for venv in venvs):
        for line in small_text(config, 1 << 16).splitlines():
            _key, eq, value = line.partition("=")
            said += [(config, word) for word in (value.split() if eq else ()) if word.startswith("/")]
    kernels = [os.path.join(k, "kernel.json") for sub in _KERNELS for k in folders(os.path.join(place, sub))[:_MAX_ENVS]]
    said += [(file, word) for file in kernels for word in _kernel_argv(small_text(file, 1 << 16))]
    return found + [(file, spelled) for file, word in said for spelled in (os.path.normpath(word), os.path.realpath(word))]


def _base_installs(place: str) -> list[tuple[str, str]]:
    """(file, path) for each editable install of the base Pythons kept in `place` (`_BASES`)."""
    from app.core.repository_rules import folders, installs_in

    found: list[tuple[str, str]] = []
    bases = [os.path.join(place, name) for name in _BASES]
    for base in bases + [b for sub in _BASES_APART for b in folders(os.path.join(place, sub))[:_MAX_ENVS]]:
        installs_in(base, found)
    return found


def _kernel_argv(text: str) -> list[str]:
    """The absolute words of a kernel spec's `argv` (its interpreter first), or none."""
    import json

    try:
        argv = json.loads(text or "null").get("argv")
    except (ValueError, RecursionError, AttributeError):
        return []
    return [w for w in argv if isinstance(w, str) and w.startswith("/")] if isinstance(argv, list) else []
