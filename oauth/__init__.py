"""OAuth 2.1 for hosted assistants, next to the pre-shared ``mcpr_`` tokens.

The authorization server is django-oauth-toolkit (metadata, PKCE, DCR, revocation); this app
adds what is ours: the protected-resource metadata of /mcp, the audience-checked bearer
resolution the MCP endpoint calls, the consent page and the mapping of each (application,
user) grant to an McpClient row, so labels, tags, rollouts and fetch counters apply unchanged.
"""
