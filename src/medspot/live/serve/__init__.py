"""MedSPOT-Live for the agents people build (`medspot live serve`): the same episodes and run
folders as `medspot live run`, driven from outside.

    host             the episodes of a server and its run folder (`EpisodeHost`)
    episodes         whose episode is whose (found by owner and id only; unguessable ids)
    tools            the servers' tools as pure, bounded argument schemas (one per action)
    http             the HTTP port bound before anything is written, uvicorn, the signals
    mcp_server       an MCP server (the official `mcp` SDK; `pip install 'medspot[mcp]'`)
    openenv_server   an OpenEnv HTTP/WebSocket server (`pip install 'medspot[openenv]'`)
    openenv_models   the OpenEnv action, observation and state types (shared with the client)

Nothing here is imported by `import medspot.live`; the heavy packages are imported only by the
server modules, and a missing one is an error naming its extra.
"""

# an HTTP client silent this long has left: its episodes are abandoned (0: never;
# `medspot.limits` bounds the option)
IDLE_TIMEOUT_S = 600.0
