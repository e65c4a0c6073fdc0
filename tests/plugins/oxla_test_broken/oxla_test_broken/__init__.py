"""An oxla plugin that is broken on purpose: its plugin module cannot be imported."""
