"""deferchat: the Textual presentation layer. Presents engine events, answers approvals."""
