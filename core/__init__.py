"""deferchat: the engine. Never imports Textual."""
