"""``llm-agent-session view``: a local, read-only web viewer of transcripts (docs/viewer.md).

``server.py`` starts it (with ``limits.py``'s bounds on connections and header time),
``security.py`` is the one wrapper every request passes (Host, method, token, headers),
``app.py`` the routes (a flat table of thin handlers), ``links.py`` every address handed
out, ``model.py`` what the routes serve (the open transcripts and each answer of the data
API), ``problems.py`` the answers that are errors, ``shelf.py`` the transcripts under the
PATHs given and their rows, ``transcript.py`` one open transcript (peek, the index, the
history, follow, jumps) and ``transcript_search.py`` its search, ``render.py`` and
``markdown.py`` an envelope as the page shows it, and ``static/`` the page itself
(hand-written, no build step). It needs the ``view`` extra (starlette, uvicorn,
markdown-it-py); the core does not.
"""
