"""A tiny oxla plugin for tests: an honest backend with no device, a pass, a command."""
