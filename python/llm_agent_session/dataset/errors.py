"""What goes wrong with OUT as the user gave it: each error says what, and what to do."""

from __future__ import annotations


class DatasetError(Exception):
    """The export cannot run as asked (SRC missing, OUT inside SRC): what is wrong, and what to do."""


class NotADataset(DatasetError):
    """OUT is not a dataset directory this version made (a file, a directory of other files,
    another version's manifest, a manifest with a value of the wrong type): what is wrong,
    and what to do."""


class NoDatasetYet(NotADataset):
    """OUT is a dataset directory no export has committed to yet (the first one was
    stopped before its commit, or is still running): its tables are empty, not the data."""
