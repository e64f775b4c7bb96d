"""The pure-Python core: the reference implementation of every piece the native core has.

``_backend`` picks functions from here or from ``llm_agent_session._native``.
"""
