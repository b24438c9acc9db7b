"""Signing in to remote MCP servers with OAuth, on the MCP SDK's own client.

* :mod:`.flow`: the SDK's ``OAuthClientProvider`` wired to deferchat (who is asked, where
  requests go, what is kept): ``remote_auth``, ``SignIn``, ``SignInPresenter``, ``SignInRequired``.
* :mod:`.tokens`: the sign-in file (0600, in the config folder, never the chat database) and the
  SDK's ``TokenStorage`` over it; ``redact_tokens``.
* :mod:`.listener`: the one-shot loopback listener the authorization code comes back to.
* :mod:`.http`: the guarded, bounded HTTP transport every request of a remote server takes.

Nothing here is imported until a remote server connects or a sign-in command runs.
"""
