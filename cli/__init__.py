"""The ``oxla`` command line (click). Entry point: :func:`oxla.cli.main.main`."""
