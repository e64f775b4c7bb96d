"""``llm-agent-session view``: a local, read-only web viewer of transcripts (docs/viewer.md).

``server.py`` starts it (with ``limits.py``'s bounds on connections and header time),
``security.py`` is the one wrapper every request passes (Host, method, token, headers),
``app.py`` the routes, ``shelf.py`` the transcripts
under the PATHs given and their rows, ``transcript.py`` one open transcript (peek, the
index, the history, follow), ``render.py`` and ``markdown.py`` an envelope as the page
shows it, and ``static/`` the page itself (hand-written, no build step). It needs the
``view`` extra (starlette, uvicorn, markdown-it-py); the core does not.
"""
