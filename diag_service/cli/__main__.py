"""``python -m diag_service.cli``: the ``diag`` command."""

from diag_service.cli.main import app

if __name__ == "__main__":
    app()
