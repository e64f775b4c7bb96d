"""What the tests share: transcripts and their builders (``helpers``), the Claude Code and
Codex line shapes (``import_fixtures``), the command line run in-process and as a child
(``cli``), the hostile corpus (``hostile``), a served viewer and Chromium (``view``,
``browser``), the dataset's fleets (``dataset``, ``big_transcripts``) and the JavaScript
scanner (``js_scan``). Imported as ``tests.support.NAME``: the test tree is a package, so
nothing edits ``sys.path``; a child process gets the tree's root on ``PYTHONPATH``
(``helpers.child_env``)."""
