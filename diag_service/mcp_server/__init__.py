"""``diag mcp``: an MCP server (the ``mcp`` package, stdio) whose tools are calls to a running ``diag serve``.

Entry points: :func:`~diag_service.mcp_server.server.build_server` (a :class:`ServiceAPI` in, an
``mcp.server.MCPServer`` out) and the ``diag mcp`` command (:mod:`diag_service.mcp_server.cli`). Needs the
``[mcp]`` extra; nothing here is imported by the other commands.
"""
