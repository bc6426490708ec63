"""The computer-use APIs as live agents (`--model openai-computer-use`, `--model
anthropic-computer-use`; docs/live/agents.md "Computer-use APIs").

    actions      the APIs' actions read into the one live action type (pure)
    transcript   the conversation kept in the journal (`call_state`) and rebuilt from it (pure)
    agent        the turn logic both agents share (batches, observation-only actions, cost)
    openai_cu    the Responses API's computer tool through the official `openai` client
    anthropic_cu the Messages API's computer-use tool through the official `anthropic` client
"""
