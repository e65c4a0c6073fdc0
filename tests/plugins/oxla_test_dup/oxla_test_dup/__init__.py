"""An oxla plugin that claims the backend name ``testdummy`` too."""
