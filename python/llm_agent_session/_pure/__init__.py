"""The pure-Python core: the reference of every piece the native core (``rust/``) has,
and nothing both cores use (that lives beside this package: ``_fold.py``, ``_core.py``).

``core.py`` is this core as a ``_core.Core``; ``_backend`` runs it or ``_native_core``.
"""
