"""Network destinations: how a URL's host is read (:mod:`core.net.host`) and which destinations a
tool may reach, connected to exactly as checked (:mod:`core.net.guard`)."""
