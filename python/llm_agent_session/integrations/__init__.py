"""Adapters that plug a transcript into agent runtimes (docs/integrations.md).

Each submodule needs its runtime, installed through the extra of the same name:
`openai_agents` (pip install 'llm-agent-session[openai-agents]') and `pydantic_ai`
(pip install 'llm-agent-session[pydantic-ai]'). Nothing is imported here, so the core
keeps its zero dependencies.
"""
